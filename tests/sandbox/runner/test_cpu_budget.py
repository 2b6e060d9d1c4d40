"""A job's CPU-time limit covers its wall timeout on every thread it is granted: the limit of
the timeout alone ended 2-thread references halfway through their time with SIGXCPU
(KernelBench level3/10 and 45 on a 2-CPU host)."""

from __future__ import annotations

from sandbox.runner.measure.timing import granted_cpus
from sandbox.runner.process.confine import cpu_budget


def test_the_cpu_budget_is_the_timeout_on_each_granted_thread() -> None:
    n = granted_cpus()
    assert cpu_budget(100, None) == 105 * n
    assert cpu_budget(100.7, 1) == 105
    assert cpu_budget(100, 10_000) == 105 * n  # never more threads than the host grants
    assert cpu_budget(30, 2) == 35 * min(2, n)

"""A native kernel's OpenMP team that first runs on a later trial is not work left
running. KernelBench's shapes cross a kernel's serial/parallel threshold between the
default and the perturbed sizes; the kernel's libgomp is the one torch loaded (same
soname), whose pool the runner starts before any trial (``timing.grant_threads``), so
no new native thread appears when the team first runs. A regression guard: were the
two runtimes ever apart, this honest kernel would fail no_stray_work."""

from __future__ import annotations

from sandbox.judge import EvalOptions, Judge
from tests.sandbox.judge import fixture_catalog as fc

REFERENCE = fc.problem("relu_affine").read_text()
# serial at the default size (13 x 777 = 10101 elements), parallel at the grown perturbed size
THRESHOLD = (fc.HONEST / "relu_affine__native.py").read_text().replace(
    "#pragma omp parallel for simd schedule(static)", "#pragma omp parallel for simd schedule(static) if(n > 10101)")


def test_a_team_that_starts_on_a_later_trial_is_not_stray_work() -> None:
    assert "if(n > 10101)" in THRESHOLD
    with Judge() as judge:
        result = judge.evaluate(REFERENCE, THRESHOLD, options=EvalOptions(device="cpu", trials=2, time_reps=5,
                                                                          timing_sets=2, baseline_cache=False))
    checks = result.to_json()["checks"]
    assert checks["no_stray_work"] == "pass", (checks, result.reasons)
    assert result.verdict == "pass", result.reasons

"""Interleaved timing: a held job runs nothing (its threads and forked processes
included), and the judge times the baselines and a native candidate by turns,
set by set, with the runner's held time taken out of the candidate's clock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from sandbox.judge import EvalOptions, Judge
from sandbox.runner.process import freeze
from tests.sandbox.judge import fixture_catalog as fc

# A job that keeps both CPUs busy three ways: its main thread, a second thread
# (native code would be the same to the kernel) and a process it forked.
BUSY = """
import os, threading
os.setsid()
def spin():
    while True:
        pass
threading.Thread(target=spin, daemon=True).start()
if os.fork() == 0:
    spin()
print("ready", flush=True)
spin()
"""


def _states(pids: list[int]) -> set[str]:
    out = set()
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            out.add(f.read().rpartition(")")[2].split()[0])
    return out


def test_a_held_job_runs_nothing_not_its_threads_nor_its_forks() -> None:
    proc = subprocess.Popen([sys.executable, "-c", BUSY], stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline().strip() == b"ready"
        scope = freeze.Scope(proc.pid, os.getuid(), unique=False, sole_uid=False, sessions={proc.pid})
        pids = scope.pids()
        assert len(pids) == 2  # the job and its fork (threads are part of their process)
        assert freeze.freeze(scope)
        assert _states(pids) <= {"T", "t"}
        before = freeze.cpu_ticks(scope)
        time.sleep(0.5)
        assert freeze.ran(before, freeze.cpu_ticks(scope)) == 0
        freeze.thaw(scope)
        before = freeze.cpu_ticks(scope)
        time.sleep(0.5)
        assert freeze.ran(before, freeze.cpu_ticks(scope)) > 10  # clock ticks: it runs again
    finally:
        for pid in freeze.Scope(proc.pid, os.getuid(), False, False, set()).pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        proc.wait()


def test_ticks_of_a_process_that_appears_while_held_count_whole() -> None:
    assert freeze.ran({1: 5, 2: 7}, {1: 5, 2: 7}) == 0
    assert freeze.ran({1: 5}, {1: 6, 3: 4}) == 5


ROW_NORM = fc.problem("row_norm").read_text()
NATIVE = (fc.HONEST / "row_norm__temporary.py").read_text()


def test_the_judge_times_baselines_and_candidate_by_turns() -> None:
    options = EvalOptions(device="cpu", trials=1, time_reps=6, baseline_cache=False)
    with Judge(warm=True) as judge:
        result = judge.evaluate(ROW_NORM, NATIVE, options=options)
        assert result.verdict == "pass", result.reasons
        for name in ("baseline_eager", "baseline_compile"):
            assert result.timing[name]["interleaved"] and "in turns with the candidate" in \
                result.timing[name]["source"], result.timing[name]
        assert result.speedup is not None and result.speedup_compile is not None
        # The runner's clock over the candidate's pass counts only its own turns: with the
        # baselines' turns left in, it would read several times the reported calls and fail.
        assert result.to_json()["checks"]["timer_corroborated"] == "pass", result.reasons
        assert result.cost.get("turns_job_s", 0) > 0
        # The judge's runner is ready for the next job: nothing is left parked.
        sequential = judge.evaluate(ROW_NORM, NATIVE,
                                    options=EvalOptions(device="cpu", trials=1, time_reps=6, baseline_cache=False,
                                                        interleave=False))
        assert sequential.verdict == "pass", sequential.reasons
        assert sequential.timing["baseline_eager"]["source"] == "fresh: timed in this run"


def test_a_candidate_that_fails_to_build_leaves_no_parked_reference_behind() -> None:
    broken = NATIVE.replace("y[r] = sqrtf(s);", "y[r] = sqrtf(s) +;")
    assert broken != NATIVE
    with Judge(warm=True) as judge:
        result = judge.evaluate(ROW_NORM, broken, options=EvalOptions(device="cpu", trials=1, time_reps=5))
        assert result.verdict == "fail" and result.to_json()["checks"]["compile"] == "fail"
        # The same runner judges the next candidate (the parked reference was ended, not leaked).
        ok = judge.evaluate(fc.problem("relu_affine").read_text(),
                            (fc.HONEST / "relu_affine__flat.py").read_text(),
                            options=EvalOptions(device="cpu", trials=1, timing_sets=1, time_reps=5,
                                                compile_baseline=False))
        assert ok.verdict == "pass", ok.reasons

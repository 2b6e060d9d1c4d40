"""One reading of why a sandboxed job ended: the runtime check, the reference's error and
the tuning pass all describe an exit frame through ``JobOutcome.ended``."""

import signal

from sandbox.drivers.base import JobOutcome
from sandbox.verdict import checks as C


def test_each_way_a_job_ends_is_named_with_what_the_runner_measured():
    assert JobOutcome(exit={"reason": "memory", "peak_mb": 744.5}).ended(memory_mb=768) == \
        "exceeded the memory limit of 768 MB, 744.5 MB at its peak"
    assert JobOutcome(exit={"reason": "timeout", "elapsed": 121.4}).ended() == "timed out after 121 s"
    assert JobOutcome(exit={"reason": "timeout", "elapsed": 121.4}).ended(timeout=120) == "timed out after 120 s"
    assert JobOutcome(exit={"signal": int(signal.SIGKILL)}).ended() == "crashed with SIGKILL (likely the memory limit)"
    assert JobOutcome(exit={"signal": int(signal.SIGSEGV), "peak_mb": 12.0}).ended() == \
        "crashed with SIGSEGV, 12 MB at its peak"
    assert JobOutcome(exit={"reason": "protocol", "detail": "bad length"}).ended() == \
        "wrote a malformed result frame: bad length"
    assert JobOutcome(exit={"exit_code": 3}).ended() == "exited with code 3"
    assert JobOutcome(exit={}).ended() == ""


def test_the_runtime_check_reads_the_same_description_and_says_where():
    outcome = JobOutcome(frames=[{"kind": "loaded"}, {"kind": "trial", "index": 2}],
                         exit={"reason": "memory", "peak_mb": 900.0})
    check = C.runtime_check(outcome, 120.0, 768)
    assert check.outcome == C.FAIL
    assert check.detail == "exceeded the memory limit of 768 MB, 900 MB at its peak after trial 2"
    assert C.runtime_check(JobOutcome(frames=[{"kind": "done"}], exit={"exit_code": 0}), 120.0, 768).outcome == C.PASS

"""The checks on the clocks: the times a job reported against the runner's own clock over
the same calls (``timer_corroborated``), and a clocked call's window against the job's
reading of it."""

from __future__ import annotations

import statistics
from typing import Any

from ..drivers.base import JobOutcome
from .checks import FAIL, PASS, SKIPPED, Check


def median_iqr(times: list[float]) -> dict[str, float]:
    q = statistics.quantiles(times, n=4) if len(times) >= 2 else [times[0]] * 3
    return {"median_ms": statistics.median(times), "q1_ms": q[0], "q3_ms": q[2], "reps": len(times)}


# The runner's clock over the timed pass minus the same pass without calls is
# what the calls took; the reported mean may not be below this share of it,
# minus a slack for the noise of the two passes' loads and flushes and for the
# frames' trips to the runner.
CORROBORATION_SHARE = 0.5
CORROBORATION_SLACK_MS = 0.2
CORROBORATION_NULL_SHARE = 0.25
CORROBORATION_STAMP_MS = 2.0
# Sets of the null pass at most (the judge asks the candidate's job for no more): it
# measures what a set costs besides the call (its load, the cache flush, the checks),
# the same for every set, so its mean over 16 is as good as over 50, and the 34 left
# out were 0.1 s of a small evaluation.
NULL_PASS_REPS = 16


def corroboration_check(outcome: JobOutcome, label: str, device: str = "cuda", enforce: bool = False) -> Check:
    """The reported times against the runner's own clock over the same calls.

    Enforced on CUDA and, with ``enforce``, for native kernels on the CPU
    (whose speedups are reported). For Triton's interpreter on the CPU it is
    reported only: no speedup is reported there, and patched clocks are still
    caught by no_tampering. On CUDA the runner's clock reads each repetition's own
    window (``repetition_windows``), elsewhere the whole pass."""
    timing = next((f for f in outcome.of_kind("timing") if f.get("name") == label), None)
    if timing is not None and timing.get("clock") == "runner":
        if timing.get("clock_errors") or not timing.get("times_ms"):
            why = "; ".join(timing.get("clock_errors") or []) or "no call was clocked"
            return Check("timer_corroborated", FAIL, f"the runner could not clock the timed calls: {why}")
        return runner_clock_check(timing)
    stamps = [outcome.stamp(f"{label}:{p}") for p in ("loop_start", "loop_end", "null_start", "null_end")]
    if timing is None or any(s is None for s in stamps) or not timing.get("times_ms"):
        return Check("timer_corroborated", FAIL if enforce else SKIPPED, "no timing phase ran")
    l0, l1, n0, n1 = stamps
    # On CUDA the clock starts after the first repetition (runner/measure/timing.time_cuda): what CUDA
    # pays once, lazily, falls there. The reported times compared are those of the same calls.
    # The frame comes from the candidate's process: it may leave out one repetition, never more.
    skip = 1 if device == "cuda" and timing.get("clocked_from") and len(timing["times_ms"]) > 1 else 0
    clocked = timing["times_ms"][skip:]
    reps = len(clocked)
    null_reps = min(len(timing["times_ms"]), NULL_PASS_REPS)  # what the judge asked the null pass for
    if device == "cuda":
        windows = repetition_windows(outcome, label, (l0, l1, n0, n1), reps, null_reps)
        if isinstance(windows, str):
            return Check("timer_corroborated", FAIL, windows)
        null_ms, outside_ms = windows
    else:
        # Timed by turns: the runner held the job stopped between its sets (its own record).
        null_ms = max(0.0, (n1 - n0 - outcome.paused_within(n0, n1)) * 1000 / null_reps)
        outside_ms = max(0.0, (l1 - l0 - outcome.paused_within(l0, l1)) * 1000 / reps - null_ms)
    reported = statistics.median(clocked)
    mean = statistics.fmean(clocked)
    if device != "cuda" and not enforce:
        return Check("timer_corroborated", SKIPPED,
                     f"CPU, not enforced: reported {reported:.4f} ms, outside clock {outside_ms:.4f} ms")
    slack = CORROBORATION_SLACK_MS + CORROBORATION_NULL_SHARE * null_ms + CORROBORATION_STAMP_MS / reps
    if mean < CORROBORATION_SHARE * outside_ms - slack:
        return Check("timer_corroborated", FAIL,
                     f"reported {reported:.4f} ms per call (mean {mean:.4f} ms), "
                     f"the runner's clock saw {outside_ms:.4f} ms over the same {reps} calls")
    return Check("timer_corroborated", PASS,
                 f"reported mean {mean:.4f} ms, outside clock {outside_ms:.4f} ms over the same {reps} calls")


# A pass clocked by the runner: the job's own record of its calls may not fall below this
# share of the runner's, less the clock's own cost a call (a cold first call's window can
# cost twice the calibrated one), its spread where larger, and never less than
# RUNNER_SLACK_MS: a record cut below that was rewritten inside the job. The verdict's
# times are the runner's either way: this check names the cheat, it never guards a number.
RUNNER_SHARE = 0.5
RUNNER_SLACK_MS = 0.02
# Fewer calls than this have no spread to read and no median to absorb one late wake-up of
# the runner: their slack gets the clock's cost a call again and FEW_CALLS_MS more (CI's host:
# one 0.26 ms call of an honest kernel read 0.99 ms, less 0.23 ms of the clock's own).
FEW_CALLS = 3
FEW_CALLS_MS = 0.25
SPREAD_CAP = 2.0
# and the slack of many calls stays under half a millisecond whatever the calibration read: a
# noisy host's clock cost of 0.45 ms let a ~1.7 ms call recorded at a tenth pass 1 run in 24
SLACK_CAP_MS = 0.5
# What a window's two wake-ups (the job's after it is continued, the runner's after the job stops)
# may wait for a CPU on a loaded host, at most: CI's 2-CPU host with a second test run beside it made
# an honest 0.30 ms call's windows 1.15 ms, 0.85 ms of it waiting. A wait past it is inside the call,
# where the job's wall clock counts it as well: taking it out would let a record cut tenfold pass
# whenever the calling thread waited for most of its call (the red team's recorded_times_gc did).
WAITED_CAP_MS = 2.0
# The job's record of a call against the copy of it the runner took at the stop after the call
# (``clocked.OWN_NS``): the same number, so any difference past a nanosecond was written later.
REWRITE_TOLERANCE_MS = 1e-6


def rewritten_calls(inside: list[float], at_stop: list[Any]) -> list[int]:
    """The calls whose time in the job's final record differs from the one the runner copied out
    of the job at the stop after the call; none where the runner has no copy of every call."""
    if len(at_stop) != len(inside) or not all(isinstance(v, (int, float)) for v in at_stop):
        return []
    return [k for k, (said, read) in enumerate(zip(inside, at_stop))
            if not isinstance(said, (int, float)) or abs(said - read) > REWRITE_TOLERANCE_MS]


def runner_clock_check(timing: dict[str, Any]) -> Check:
    """The times are the runner's (``runner/measure/clocking.py``); the job's own record of the same
    calls must not fall far below them (a candidate that rewrote it reached the harness)."""
    times, inside = timing["times_ms"], timing.get("inside_ms") or []
    runner_ms = statistics.median(times)
    said = f"{len(times)} calls timed on the runner's clock, outside the candidate's process " \
           f"(median {runner_ms:.4f} ms, less {timing.get('clock_overhead_ms') or 0:.4f} ms a call of the clock's own"
    waited, windows = timing.get("waited_ms") or [], timing.get("window_ms") or []
    overhead = float(timing.get("clock_overhead_ms") or 0.0)
    if len(waited) == len(windows) == len(times) and all(isinstance(w, (int, float)) for w in waited):
        # A loaded host: what the calling thread and the runner waited for a CPU around a call (the
        # job's wake-up, the runner's notice of its stop) is the host's, not the call's; the kernel
        # counts it. The clock's calibrated cost is made of the same wake-ups, so a window loses
        # the one or the other, whichever is larger, never both; and waits inside the call are in
        # the job's own wall-clock record too, so no more than WAITED_CAP_MS a window counts
        # (the verdict's times keep the waits either way).
        runner_ms = statistics.median(max(0.0, w - max(overhead, min(q, WAITED_CAP_MS)))
                                      for w, q in zip(windows, waited))
        said += f"; {runner_ms:.4f} ms less what it waited for a CPU"
    said += ")"
    if len(inside) != len(times):
        return Check("timer_corroborated", FAIL, f"{said}; the candidate's process recorded {len(inside)} of them")
    changed = rewritten_calls(inside, timing.get("own_at_stop_ms") or [])
    if changed:
        k = changed[0]
        return Check("timer_corroborated", FAIL,
                     f"{said}; the candidate's process read {timing['own_at_stop_ms'][k]:.4f} ms for call {k} "
                     f"at the stop after it and reported {inside[k]:.4f} ms at the end ({len(changed)} of "
                     f"{len(inside)} calls changed): its record of its times was rewritten")
    own_ms = statistics.median(inside)
    # the calibration's spread counts up to SPREAD_CAP clock costs: on a noisy host its quartiles
    # drifted past a millisecond, and a record cut to a tenth passed one run in three
    spread = min(float(timing.get("clock_spread_ms") or 0.0), SPREAD_CAP * overhead)
    slack = min(max(RUNNER_SLACK_MS, spread, overhead), SLACK_CAP_MS)
    if len(times) < FEW_CALLS:
        slack += overhead + FEW_CALLS_MS
    if own_ms < RUNNER_SHARE * runner_ms - slack:
        return Check("timer_corroborated", FAIL,
                     f"{said}; the candidate's process recorded {own_ms:.4f} ms for the same calls: "
                     "its record of its times was rewritten")
    return Check("timer_corroborated", PASS, f"{said}; its own record agrees ({own_ms:.4f} ms)")


def repetition_windows(outcome: JobOutcome, label: str, bounds: tuple[float, float, float, float], reps: int,
                       null_reps: int) -> tuple[float, float] | str:
    """CUDA: (the null pass's mean window, the calls' mean window less it), in ms, from the
    runner's stamps of each repetition's marks (runner/measure/timing.cuda_rep), or why they cannot
    be trusted. Marks come from the candidate's process: exactly one start and one end per
    clocked repetition, in turn, inside their pass, or the clock is not corroborated."""
    l0, l1, n0, n1 = bounds
    found = []
    for prefix, count, lo, hi in (("", reps, l0, l1), ("null_", null_reps, n0, n1)):
        names = {f"{label}:{prefix}rep_start": 0, f"{label}:{prefix}rep_end": 1}
        # in the order the frames came (two frames read at once share a stamp)
        marks = [(names[f["name"]], f.get("_t")) for f in outcome.frames
                 if f.get("kind") == "phase" and f.get("name") in names]
        starts, ends = [t for k, t in marks if k == 0], [t for k, t in marks if k == 1]
        sound = (len(starts) == len(ends) == count and all(k == i % 2 for i, (k, _) in enumerate(marks))
                 and all(isinstance(t, float) and lo <= t <= hi for _, t in marks))
        if not sound:
            return (f"the {prefix or 'timed '}pass's repetition marks do not add up: {len(starts)} starts and "
                    f"{len(ends)} ends for {count} repetitions, or out of turn, or outside the pass")
        found.append(statistics.fmean(e - s for s, e in zip(starts, ends)) * 1000 if count else 0.0)
    timed_ms, null_ms = found
    return null_ms, max(0.0, timed_ms - null_ms)

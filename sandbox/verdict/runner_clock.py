"""The runner's clock over a pass it clocked (``runner/measure/clocking.py``), in place of what the
job said of itself.

A job clocked by the runner still sends its own timing frame and post_timing frame,
from its own process: a candidate can write anything into them. So the times, the
timed outputs and which calls changed their inputs are the runner's, read outside
the job; what the job says of them is kept beside (``inside_ms``), never used.
"""

from __future__ import annotations

from ..drivers.base import JobOutcome


def apply(outcome: JobOutcome) -> None:
    """The outcome's timing frames take the runner's times per party, set by set, and its
    post_timing frame the runner's copies of the candidate's timed outputs; a party the
    runner clocked no call of has no times."""
    calls = sorted((f for f in outcome.clock if f.get("kind") == "clocked"), key=lambda f: f.get("set", 0))
    calibration = next((f for f in outcome.clock if f.get("kind") == "clock_overhead"), {})
    overhead = calibration.get("ms")
    windows = sorted(float(w) for w in calibration.get("windows_ms") or [])
    # the spread of the clock's own cost: how far a window may stray from it either way
    spread = windows[(3 * len(windows)) // 4] - windows[len(windows) // 4] if len(windows) >= 4 else None
    errors = [f.get("detail", "") for f in outcome.clock if f.get("kind") == "clock_error"]
    for frame in outcome.of_kind("timing"):
        mine = [f for f in calls if f.get("name") == frame.get("name")]
        frame["inside_ms"] = frame.get("times_ms")
        frame["times_ms"] = [float(f["ms"]) for f in mine]
        frame["window_ms"] = [float(f["window_ms"]) for f in mine]
        frame["waited_ms"] = [f.get("waited_ms") for f in mine]
        frame["own_at_stop_ms"] = [f.get("own_ms") for f in mine]
        frame["samples"] = [f.get("samples") or {} for f in mine]  # runner/measure/sampling.py
        frame["clock"] = "runner"
        frame["clock_overhead_ms"] = overhead
        frame["clock_spread_ms"] = spread
        if errors:
            frame["clock_errors"] = errors
    post = outcome.first("post_timing")
    if post is not None:
        mine = [f for f in calls if f.get("name") == "candidate"]
        post["outputs"] = [list(f.get("outputs") or []) for f in mine]
        post["structures"] = [str(f.get("structure")) for f in mine]
        post["inputs_changed"] = [int(f["set"]) for f in mine if f.get("inputs_changed")]
        post["clock"] = "runner"

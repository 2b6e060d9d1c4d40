"""Interleaved timing, the runner's side: parked jobs' timed passes run by turns.

A job whose spec says ``park`` stops itself (SIGSTOP) once it is ready to
time, asking for its first timed set; the runner holds every other process of it
stopped too (``freeze``). ``interleave`` then serves the parked jobs one request
at a time, in the order the judge named them: a call on a set clocked by the
runner (``clocking``), or a set loaded for a replay; the job runs until it asks
again (its turn is over) or ends, the next one is served, and so on until all
have ended. So the reference's baselines and the candidate are timed call by
call in alternation, and whatever load the machine has falls on all of them
alike -- while one is timed, nothing of the other runs.

Frames sent here, besides the jobs' own (stamped, with the job's id) and the
clock's (``clocking``):

  {"kind": "paused", "job": id, "from": t0, "to": t1}  the job was held stopped
      from t0 to t1 (the runner's clock): its cost phases leave that out;
  {"kind": "crosstalk", "job": id, "ticks": n, "during": other}  a held job's
      processes ran n clock ticks during the other's turn;
  {"kind": "exit", "job": id, ...}  a job ended (its reason "unstoppable"
      if a process of it kept running when held).
"""

from __future__ import annotations

import time
from typing import Any

from . import clocking, freeze

# A call's output the runner copies out of a job: at most this many bytes.
MAX_OUTPUT_BYTES = 4 << 30


def interleave(runner: Any, msg: dict[str, Any]) -> None:
    jobs = [runner.parked.pop(i) for i in msg.get("jobs", []) if i in runner.parked]
    deadline = time.monotonic() + float(msg.get("timeout", 60))
    clock = clocking.Clock(runner, msg.get("sets") or [], msg.get("parties") or {},
                           int(msg.get("max_output_bytes") or MAX_OUTPUT_BYTES))
    if jobs:
        clock.calibrate()
        runner.send({"kind": "clock_overhead", "ms": clock.overhead_ms, "windows_ms": clock.calibration})
    for job in jobs:
        job.deadline = deadline
    alive = list(jobs)
    runner.turning = alive  # their directories are live (``Runner.live_dirs``)
    turn = 0
    while alive:
        job = alive[turn % len(alive)]
        held = [j for j in alive if j is not job]
        before = {j.id: freeze.cpu_ticks(j.scope) for j in held}
        going = clock.step(job)
        for j in held:
            ticks = freeze.ran(before[j.id], freeze.cpu_ticks(j.scope))
            if ticks:
                runner.send({"kind": "crosstalk", "job": j.id, "ticks": ticks, "during": job.id})
        if not going:
            alive.remove(job)
            runner.send(job.end())
            continue
        turn += 1


def drop(runner: Any, msg: dict[str, Any]) -> None:
    """Ends parked jobs the judge no longer needs (the other party failed first)."""
    for i in msg.get("jobs", []):
        job = runner.parked.pop(i, None)
        if job is not None:
            runner.send(job.end())

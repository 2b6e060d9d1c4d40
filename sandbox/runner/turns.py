"""Interleaved timing, the runner's side: parked jobs' timed passes run by turns.

A job whose spec says ``park`` stops itself (SIGSTOP) once it is ready to
time, and again after each timed set (``timed.Turns``); the runner holds every
other process of it stopped too (``freeze``). ``interleave`` then continues
the parked jobs one at a time, in the order the judge named them: a job runs
until it stops itself again (its turn is over) or ends, the next one
continues, and so on until all have ended. So the reference's baselines and
the candidate are timed set by set in alternation, and whatever load the
machine has falls on all of them alike -- while one is timed, nothing of the
other runs.

Frames sent here, besides the jobs' own (stamped, with the job's id):

  {"kind": "paused", "job": id, "from": t0, "to": t1}  the job was held stopped
      from t0 to t1 (the runner's clock, as the stamps): the judge takes these
      out of the job's timed pass before comparing clocks;
  {"kind": "crosstalk", "job": id, "ticks": n, "during": other}  a held job's
      processes ran n clock ticks during the other's turn;
  {"kind": "exit", "job": id, ...}  a job ended (its reason "unstoppable"
      if a process of it kept running when held).
"""

from __future__ import annotations

import time
from typing import Any

from . import confine, freeze


def interleave(runner: Any, msg: dict[str, Any]) -> None:
    jobs = [runner.parked.pop(i) for i in msg.get("jobs", []) if i in runner.parked]
    deadline = time.monotonic() + float(msg.get("timeout", 60))
    for job in jobs:
        job.deadline = deadline
    alive = list(jobs)
    turn = 0
    while alive:
        job = alive[turn % len(alive)]
        held = [j for j in alive if j is not job]
        before = {j.id: freeze.cpu_ticks(j.scope) for j in held}
        stopped_at, resumed = job.stopped_at, job.resume()
        if stopped_at is not None:
            runner.send({"kind": "paused", "job": job.id, "from": stopped_at, "to": resumed})
        state = job.watch(until_stop=True)
        listing = confine.owners()  # one pass over /proc for this job's hold and every held job's ticks
        if state == "stopped":
            job.hold(listing)
        for j in held:
            ticks = freeze.ran(before[j.id], freeze.cpu_ticks(j.scope, listing))
            if ticks:
                runner.send({"kind": "crosstalk", "job": j.id, "ticks": ticks, "during": job.id})
        if state != "stopped" or job.reason is not None:
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

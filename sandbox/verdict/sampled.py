"""Where the candidate's timed calls spent their CPU time, against where the data flow
says the work was done (``sampled_provenance``).

The runner samples the instruction address of every thread of a clocked job on the
kernel's task clock (``sandbox/runner/measure/sampling.py``): counters the candidate cannot
reach, read outside its process, over exactly its clocked calls. A native kernel that
reaches torch or a Python extension through the ELF tables (``dlsym`` found by a walk
from a libc address, then the CPython API or torch itself) may hide that work from the
dispatch-level record, never from these samples: its time lands in torch's libraries.

    foreign share = samples in torch's and Python extensions' code, or in no mapping
                    / the samples of the candidate's clocked calls outside the OpenMP
                      runtime (threads waiting there do nobody's work)

A candidate fails when its foreign share passes the torch share of the reference's FLOPs
the data flow credited to torch (``work_share``) by more than ``SLACK`` *and* that excess,
in CPU time a call, passes ``FLOOR_US``. An honest candidate's glue (allocating its output, making
it contiguous, the ctypes call, the dispatcher) costs tens of microseconds a call,
whatever the problem's size; on a call of a few hundred microseconds that is a quarter
of its samples on a slow host (CI read 26% for an honest cumprod, 7 glue calls of an
honest batch norm read 37% and ~140 us here), where work moved into torch costs what the
work costs (the red team's reach into torch for a 384^3 matmul: 1.3-1.6 ms a call). Torch
work under the floor can hide in a native call: on problems that small, glue and work
cannot be told apart by time. The foreign share is taken at its lower bound (the count of
foreign samples less two standard deviations of a Poisson count), so that a handful of
samples does not decide. The interpreter's own time counts on neither side. Samples are
too few to tell under ``MIN_SAMPLES`` (calls of a few microseconds): then the check says
so and is skipped.

Known cost of the rule: torch ops the data flow credits no FLOPs (a dtype conversion, a
contiguous copy) are time in torch with no credit, so a candidate whose forward converts a
large tensor in torch fails here even though that torch call is visible (the offline engine
hands boolean masks to its C loops as they are for this reason: level1/93 failed with 37% of
its samples in ``mask.to(float32)``). The failure message says so.
"""

from __future__ import annotations

import math
from typing import Any

from .checks import FAIL, PASS, SKIPPED, Check

NAME = "sampled_provenance"
FOREIGN = ("torch", "python_ext", "unmapped")
SLACK = 0.25
FLOOR_US = 400.0  # foreign CPU time a call, beyond the credited share, that glue does not reach
GLUE_US = 40.0  # ... and this much more for each kernel the call launches
GLUE_LAUNCHES = 32  # ... for at most this many
MIN_SAMPLES = 20
# Calls whose buffer overflowed (a long call before the period had followed it) are left
# out; a judgement with no call left fails.


def tally(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """The samples of every clocked call summed, over calls that lost none."""
    counts: dict[str, int] = {}
    top: dict[str, int] = {}
    lossy = errors = 0
    cpu_ns = 0.0
    why = ""
    for call in calls:
        if not call or call.get("error"):
            errors += 1
            why = why or str((call or {}).get("error") or "no samples reached the judge")
            continue
        if call.get("lost"):
            lossy += 1
            continue
        for kind, n in (call.get("counts") or {}).items():
            counts[kind] = counts.get(kind, 0) + int(n)
            if kind != "openmp":
                cpu_ns += int(n) * float(call.get("period_ns") or 0)
        for name, n in call.get("top") or []:
            top[name] = top.get(name, 0) + int(n)
    total = sum(counts.values())
    base = total - counts.get("openmp", 0)  # an OpenMP runtime's samples are threads waiting: nobody's work
    foreign = sum(counts.get(k, 0) for k in FOREIGN)
    # The lower bound of a Poisson count of ``foreign``: a few samples never decide alone.
    low = max(0.0, foreign - 2 * math.sqrt(foreign))
    kept = len(calls) - lossy - errors
    return {"calls": len(calls), "lossy": lossy, "errors": errors, "why_not": why, "counts": counts,
            "samples": total, "foreign_share": round(foreign / base, 4) if base else 0.0,
            "foreign_low": round(low / base, 4) if base else 0.0,
            "cpu_us_per_call": round(cpu_ns / 1000 / kept, 1) if kept else 0.0,
            "top": sorted(top.items(), key=lambda kv: -kv[1])[:5]}


def allowance_us(launches: int) -> float:
    """Foreign CPU time a call, beyond the credited share, that glue may take."""
    return FLOOR_US + GLUE_US * min(max(0, launches), GLUE_LAUNCHES)


def check(timing: dict[str, Any] | None, work: dict[str, Any], launches: int = 0) -> Check:
    """The candidate's clocked calls' samples against the torch share ``work`` credits;
    ``launches``: the kernels a call launches (the fewest any recorded call made)."""
    if timing is None or timing.get("clock") != "runner":
        return Check(NAME, SKIPPED, "the timed calls were not clocked by the runner")
    t = tally(list(timing.get("samples") or []))
    if t["errors"] or not t["calls"]:
        return Check(NAME, FAIL, f"the runner could not sample where the timed calls ran: {t['why_not']}")
    if t["lossy"] >= t["calls"]:
        return Check(NAME, FAIL, f"all {t['calls']} clocked calls overflowed the sample buffer "
                                 "(each call's period follows the longest call before it)")
    credited = float(work.get("torch_share_flops", 0.0) or 0.0)
    where = ", ".join(f"{name} {n}" for name, n in t["top"])
    said = (f"{t['samples']} samples over {t['calls'] - t['lossy']} clocked calls: {t['foreign_share']:.0%} in "
            f"torch, Python extensions or unmapped code ({where}) of {t['cpu_us_per_call']:.0f} us of CPU a "
            f"call outside OpenMP waits; the data flow credits torch with {credited:.0%} of the FLOPs")
    if t["samples"] < MIN_SAMPLES:
        return Check(NAME, SKIPPED, f"too few samples to tell: {said}")
    beyond = t["foreign_low"] - credited  # the share no credit explains, at its lower bound
    allowed = allowance_us(launches)
    if beyond > SLACK and beyond * t["cpu_us_per_call"] > allowed:
        return Check(NAME, FAIL, f"the kernels are credited with work torch or Python did inside them: {said} "
                                 "(torch work the data flow credits no FLOPs counts too: a dtype conversion or a "
                                 f"copy of a large tensor in the forward; do it inside the kernel); glue for "
                                 f"{launches} kernel launches a call is allowed {allowed:.0f} us)")
    return Check(NAME, PASS, said)

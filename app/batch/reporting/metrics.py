"""Batch metrics, defined exactly.

A *record* is one (problem, sample). It is **correct** when the search found a
kernel that passed every check of the judge and that kernel passed again in a
final evaluation with fresh seeds. A record that errored (unusable reference,
provider failure) counts as not correct; nothing is left out of a denominator.

- **correctness rate**: correct records / records.
- **fast_p** (p in P_VALUES), against eager and against torch.compile: the share
  of records that are correct *and* whose speedup (baseline median time over
  the kernel's median time, same evaluation) is > p. fast_0 is the correctness
  rate (any measured speedup is > 0), as in KernelBench. For p > 0 a correct
  record without a speedup (e.g. torch.compile failed on that reference) counts
  as not fast, and is counted in `notes`. Speedups are real on a GPU and for
  native kernels on the CPU (backend cpu: wall time against eager and
  torch.compile on the same threads, labelled with the CPU model); without real
  timing (any record of a GPU backend judged on the CPU, where Triton runs in
  its interpreter) fast_p for p > 0 is null, never 0.
- **geometric-mean speedup**: exp(mean(log s)) over correct records with a speedup;
  null when there are none.
- **held-out pass rate**: among correct records whose held-out evaluation ran
  (the reference could run at the held-out sizes), the share that passed.
- **tokens, dollars, wall time**: sums, and means per record.
- **fastest**: per record, which of {the kernel, eager, torch.compile} the final
  evaluation measured fastest (agents.comparison: "unknown" when no
  speedup was measured, or no kernel was correct); `kernel_won` counts the
  records a kernel actually won, `kernel_beats_eager` those faster than eager.

Two views when `--samples K` > 1: `per_sample` treats every (problem, sample)
as a record (the expected result of one attempt); `best_of_k` takes per problem
its best sample (correct first, then the highest eager speedup).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from agents.search import FASTEST, Comparison, compare

from ...backends import timed_for_real

P_VALUES = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)
BASELINES = ("eager", "compile")
ROOF_PARTIES = ("kernel", "eager", "compile")  # each one's fraction of the roofline bound (issue 56)
NO_GPU = "no GPU timing: Triton ran in its interpreter on the CPU, so speedups are not measured"


def timed_on(record: dict[str, Any]) -> str | None:
    """"cuda" or "cpu" when the record's speedups are measured for real, else None."""
    device = record.get("device")
    return device if timed_for_real(record.get("backend"), device) and device in ("cuda", "cpu") else None


def timing_kind(records: list[dict[str, Any]]) -> str | None:
    """"cuda", "cpu", or "mixed" when every finished record was timed for real; None otherwise."""
    kinds = {timed_on(r) for r in records if r.get("status") == "done"}
    if not kinds or None in kinds:
        return None
    return kinds.pop() if len(kinds) == 1 else "mixed"


def gpu_timed(records: list[dict[str, Any]]) -> bool:
    return timing_kind(records) == "cuda"


def timed(records: list[dict[str, Any]]) -> bool:
    return timing_kind(records) is not None


def cpu_note(records: list[dict[str, Any]]) -> str:
    labels = sorted({str(r.get("hardware")) for r in records if timed_on(r) == "cpu" and r.get("hardware")})
    return (f"CPU timing on {'; '.join(labels) or 'this machine'}: wall time of native kernels against eager "
            "PyTorch and torch.compile on the same threads; not GPU speed")


def comparison_of(record: dict[str, Any]) -> Comparison:
    """The record's comparison: stored by the task, or (older records) from its final
    evaluation's medians and the speedups the task reported (which name a cached
    torch.compile baseline as such in ``baseline_source``)."""
    timing = dict(((record.get("final") or {}).get("timing")) or {})
    for base, key in (("eager", "speedup_vs_eager"), ("compile", "speedup_vs_compile")):
        value = record.get(f"speedup_{base}")
        timing[key] = {"value": value} if value is not None else None
    best = record.get("best") or {}
    return compare(timing, verified=bool(record.get("correct")), attempt_id=best.get("id"))


def fastest_of(record: dict[str, Any]) -> str:
    stored = record.get("comparison") or {}
    return stored.get("fastest") or comparison_of(record).fastest


def fast_p(records: list[dict[str, Any]], baseline: str, p: float) -> float | None:
    if not records:
        return None
    correct = [r for r in records if r.get("correct")]
    if p == 0:
        return len(correct) / len(records)
    if not timed(records):
        return None
    key = f"speedup_{baseline}"
    return sum(1 for r in correct if r.get(key) is not None and r[key] > p) / len(records)


def geomean(values: Iterable[float]) -> float | None:
    vals = [v for v in values if v is not None and v > 0]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def best_of(samples: list[dict[str, Any]]) -> dict[str, Any]:
    return max(samples, key=lambda r: (bool(r.get("correct")), r.get("speedup_eager") or 0.0))


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The metrics of one view (a list of records)."""
    n = len(records)
    correct = [r for r in records if r.get("correct")]
    kind = timing_kind(records)
    timed = kind is not None
    out: dict[str, Any] = {
        "records": n, "correct": len(correct), "errors": sum(1 for r in records if r.get("status") == "error"),
        "correctness_rate": len(correct) / n if n else None,
        "gpu_timed": kind == "cuda", "timed": timed, "timing": kind, "notes": [],
        "scaled": sum(1 for r in records if r.get("scaled")),
    }
    if n and not timed:
        done = any(r.get("status") == "done" for r in records)
        out["notes"].append(NO_GPU if done else "no record finished, so nothing was timed")
    if kind in ("cpu", "mixed"):
        out["notes"].append(cpu_note(records))
    if out["scaled"]:
        out["notes"].append(f"{out['scaled']} record(s) ran at scaled-down sizes (--fit-memory): see each problem's "
                            "sizes")
    for base in BASELINES:
        key = f"speedup_{base}"
        out[f"fast_p_{base}"] = {f"{p:g}": fast_p(records, base, p) for p in P_VALUES}
        out[f"geomean_speedup_{base}"] = geomean(r.get(key) for r in correct) if timed else None
        missing = sum(1 for r in correct if r.get(key) is None)
        if timed and missing:
            out["notes"].append(f"{missing} correct record(s) have no speedup vs {base}; counted as not fast")
    # Geomean of each party's fraction of its roofline bound, over the correct records that have one
    # (the final evaluation's, against the machine's kept ceilings): a number no slow baseline inflates.
    out["geomean_roofline"] = {p: geomean(f for r in correct if (f := roof_fraction(r, p))) for p in ROOF_PARTIES}
    out["roofline_records"] = sum(1 for r in correct if roof_fraction(r, "kernel"))
    fastest = [fastest_of(r) for r in records]
    out["fastest"] = {k: fastest.count(k) for k in FASTEST}
    out["kernel_won"] = out["fastest"]["kernel"]
    out["kernel_beats_eager"] = sum(1 for r in correct if (r.get("speedup_eager") or 0.0) > 1.0)
    held = [r["held_out"]["status"] for r in correct if r.get("held_out")]
    ran = [s for s in held if s in ("pass", "fail")]
    out["held_out"] = {"pass": ran.count("pass"), "fail": ran.count("fail"),
                       "unavailable": held.count("unavailable"),
                       "pass_rate": ran.count("pass") / len(ran) if ran else None}
    tokens = [int(r.get("input_tokens", 0)) + int(r.get("output_tokens", 0)) for r in records]
    cost = [float(r.get("cost_usd", 0.0)) for r in records]
    wall = [float(r.get("wall_s", 0.0)) for r in records]
    out["cost"] = {"tokens": sum(tokens), "usd": sum(cost), "wall_s": sum(wall),
                   "tokens_per_record": sum(tokens) / n if n else None, "usd_per_record": sum(cost) / n if n else None,
                   "wall_s_per_record": sum(wall) / n if n else None}
    return out


def roof_fraction(record: dict[str, Any], party: str) -> float | None:
    """The party's fraction of the roofline bound in the record's final evaluation, if any."""
    roof = (record.get("final") or {}).get("roofline") or {}
    return ((roof.get("parties") or {}).get(party) or {}).get("fraction")


def by_problem(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault(r["problem"], []).append(r)
    return groups


def compute(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Every view, and per level, over the finished records (missing ones are counted)."""
    finished = [r for r in records if r.get("status") in ("done", "error")]
    groups = by_problem(finished)
    samples = max((len(v) for v in groups.values()), default=0)
    out: dict[str, Any] = {"p_values": list(P_VALUES), "problems": len(groups), "samples": samples,
                           "unfinished": len(records) - len(finished), "per_sample": summarize(finished)}
    if samples > 1:
        out["best_of_k"] = summarize([best_of(v) for v in groups.values()])
    levels = sorted({r.get("level") for r in finished}, key=lambda v: (v is None, v or 0))
    out["per_level"] = {str(lv): summarize([r for r in finished if r.get("level") == lv]) for lv in levels}
    return out


def problem_row(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """One row per problem: its best sample's results and the sums over samples."""
    best = best_of(samples)
    held = (best.get("held_out") or {}).get("status") if best.get("correct") else None
    comparison = best.get("comparison") or comparison_of(best).to_json()
    return {
        "problem": best["problem"], "level": best.get("level"), "samples": len(samples),
        "samples_correct": sum(1 for r in samples if r.get("correct")), "correct": bool(best.get("correct")),
        "status": best.get("status"), "speedup_eager": best.get("speedup_eager"),
        "speedup_compile": best.get("speedup_compile"), "baseline_source": best.get("baseline_source"),
        "fastest": comparison["fastest"], "recommendation": comparison["recommendation"],
        "held_out": held, "device": best.get("device"), "hardware": best.get("hardware"),
        "scaled": best.get("scaled"),
        # Share of the reference's FLOPs the best kernel's own kernels did (the judge's kernel_provenance).
        "kernel_share": ((best.get("final") or {}).get("work") or {}).get("kernel_share_flops"),
        "tokens": sum(int(r.get("input_tokens", 0)) + int(r.get("output_tokens", 0)) for r in samples),
        "cost_usd": sum(float(r.get("cost_usd", 0.0)) for r in samples),
        "wall_s": sum(float(r.get("wall_s", 0.0)) for r in samples),
        "best_id": (best.get("best") or {}).get("id"), "error": best.get("error"),
        "reasons": "; ".join(((best.get("final") or {}).get("reasons") or [])[:2]),
        **{f"roofline_{p}": roof_fraction(best, p) for p in ROOF_PARTIES},
        "bound_by": ((best.get("final") or {}).get("roofline") or {}).get("bound_by"),
        "roofline": ((best.get("final") or {}).get("roofline") or None) if best.get("correct") else None,
        # the search's judgement of the best kernel against the final evaluation (drift.py)
        "drift": (best.get("drift") or {}).get("note") or None,
    }

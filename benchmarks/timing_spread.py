"""How far the judge's speedups move between runs of the same candidate, and why.

Judges the row-norm kernel of ``baseline_drift.py`` ``--runs`` times with the
baseline cache off, keeps every timed call of every party (eager, torch.compile,
candidate) and prints, per run, the medians and the speedups, then the spread
of the speedups over the runs for three estimators (ratio of medians, median
of per-set ratios, ratio of lower quartiles). ``--sequential`` times the
baselines and the candidate one after the other instead of by turns.

    .venv/bin/python benchmarks/timing_spread.py --runs 4 [--sequential] [--raw out.jsonl]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from baseline_drift import CANDIDATE, REFERENCE  # noqa: E402

import sandbox.judge as judge_module  # noqa: E402
from sandbox import EvalOptions, Judge  # noqa: E402

PARTIES = ("baseline_eager", "baseline_compile", "candidate")


def judged_times(interleave: bool) -> tuple[dict[str, list[float]], Any]:
    """One judge run: every party's per-set times, and the result."""
    kept: dict[str, list[float]] = {}
    summary = judge_module.timing_summary

    def keep(ref: Any, cand: Any, device: str, native_cpu: bool = False) -> dict[str, Any]:
        for frame in ref.of_kind("timing") + cand.of_kind("timing"):
            kept[frame["name"]] = list(frame["times_ms"])
        return summary(ref, cand, device, native_cpu)

    judge_module.timing_summary = keep
    try:
        with Judge(warm=False) as judge:
            result = judge.evaluate(REFERENCE, CANDIDATE, "row_norm.py", "row_norm_native.py",
                                    EvalOptions(device="cpu", baseline_cache=False, interleave=interleave))
    finally:
        judge_module.timing_summary = summary
    return kept, result


def estimators(times: dict[str, list[float]], base: str) -> dict[str, float]:
    b, c = times[base], times["candidate"]

    def q1(v: list[float]) -> float:
        return sorted(v)[len(v) // 4]

    return {"median ratio": statistics.median(b) / statistics.median(c),
            "median of per-set ratios": statistics.median(x / y for x, y in zip(b, c)),
            "lower-quartile ratio": q1(b) / q1(c)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--sequential", action="store_true", help="baselines, then candidate (no turns)")
    ap.add_argument("--raw", help="append every run's per-set times to this JSON-lines file")
    args = ap.parse_args()
    runs = []
    for i in range(args.runs):
        times, result = judged_times(not args.sequential)
        if result.verdict != "pass" or not all(p in times for p in PARTIES):
            print(f"run {i + 1}: {result.verdict} {result.reasons}")
            continue
        runs.append(times)
        medians = {p: round(statistics.median(times[p]), 3) for p in PARTIES}
        print(f"run {i + 1}: medians ms {medians}, vs eager {result.speedup:.2f}x, "
              f"vs torch.compile {result.speedup_compile:.2f}x, source: "
              f"{result.timing['baseline_eager']['source']}", flush=True)
        if args.raw:
            with open(args.raw, "a", encoding="utf-8") as f:
                f.write(json.dumps(times) + "\n")
    for base in ("baseline_eager", "baseline_compile"):
        for name in ("median ratio", "median of per-set ratios", "lower-quartile ratio"):
            values = [estimators(t, base)[name] for t in runs]
            if values:
                mid = statistics.median(values)
                worst = max(abs(v / mid - 1) for v in values)
                print(f"{base} {name}: {', '.join(f'{v:.2f}' for v in values)}; "
                      f"farthest from their median: {worst:.0%}")


if __name__ == "__main__":
    main()

"""Judge a batch run's best kernels again, as the batch's final run judges them.

For each problem folder of a ``kforge batch run --out`` directory (its
``reference.py`` and ``s0/best.py``), ``--runs`` judgements with
``EvalOptions(device="cpu")`` on one warm judge: the kernel's quartiles, eager's
and torch.compile's medians, the speedup vs eager, page faults a call. The
package judged is the one under ``--code`` (a worktree of another commit, to
compare before and after a change on one machine); where that code clocks
calls in the runner, each party's own reading of its calls is printed beside
the runner's (``inside_ms`` against ``times_ms``, medians).

    .venv/bin/python benchmarks/judge_best_again.py --code . --runs 2 OUT/problems/level1/71_*
    .venv/bin/python benchmarks/judge_best_again.py --runs 4 --compile alternate OUT/problems/level1/1_*
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("problems", nargs="+", type=Path, help="problem folders of a batch run")
    ap.add_argument("--code", type=Path, default=Path(__file__).resolve().parents[1],
                    help="the repository whose sandbox package judges (default: this one)")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--compile", choices=("on", "off", "alternate"), default="on",
                    help="time torch.compile too (as the batch's final evaluation), not (as the search), "
                         "or every other run")
    args = ap.parse_args()
    root = args.code.resolve()
    sys.path.insert(0, str(root))
    import sandbox
    from sandbox.judge import EvalOptions, Judge

    if not sandbox.__file__.startswith(str(root)):
        raise SystemExit(f"judging with {sandbox.__file__}, not the code under {root}")
    inside: list[dict[str, Any]] = []
    try:
        from sandbox.verdict import runner_clock
    except ImportError:
        runner_clock = None  # code from before the runner's clock
    if runner_clock is not None:
        apply = runner_clock.apply

        def noting(outcome: Any) -> None:
            apply(outcome)
            for f in outcome.of_kind("timing"):
                if f.get("times_ms") and f.get("inside_ms"):
                    inside.append({"party": f["name"], "inside_ms": round(statistics.median(f["inside_ms"]), 2),
                                   "runner_ms": round(statistics.median(f["times_ms"]), 2)})

        runner_clock.apply = noting
    with Judge(warm=True) as judge:
        for folder in args.problems:
            ref, best = (folder / "reference.py").read_text(), (folder / "s0" / "best.py").read_text()
            for run in range(args.runs):
                inside.clear()
                t0 = time.monotonic()
                compiled = args.compile == "on" or args.compile == "alternate" and run % 2 == 0
                r = judge.evaluate(ref, best, options=EvalOptions(device="cpu", compile_baseline=compiled))
                t = r.timing or {}
                cand = t.get("candidate") or {}
                print(json.dumps({
                    "code": str(root), "problem": folder.name, "run": run + 1, "compile": compiled,
                    "verdict": r.verdict,
                    "kernel_q1_median_q3_ms": [round(cand.get(k) or 0, 2) for k in ("q1_ms", "median_ms", "q3_ms")],
                    "eager_ms": round((t.get("baseline_eager") or {}).get("median_ms") or 0, 2),
                    "compile_ms": round((t.get("baseline_compile") or {}).get("median_ms") or 0, 2),
                    "vs_eager": round((t.get("speedup_vs_eager") or {}).get("value") or 0, 2),
                    "faults_per_call": cand.get("faults_per_call"), "inside_vs_runner": list(inside),
                    "judge_s": round(time.monotonic() - t0, 1)}), flush=True)


if __name__ == "__main__":
    main()

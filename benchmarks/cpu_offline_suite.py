"""The offline engine with backend cpu over bundled problems, through the real judge:
per problem the family, the fastest verified parameter set, and its measured speedups
over eager and torch.compile (the judge's CPU timing), plus geomeans per family.

    .venv/bin/python benchmarks/cpu_offline_suite.py --candidates 4 problems/level1/1_relu_scale.py ...
    .venv/bin/python benchmarks/cpu_offline_suite.py            # every problem in levels 1 and 2
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from agents.offline import OfflineEngine, run_offline  # noqa: E402
from sandbox import EvalOptions, Judge  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _value(timing: dict, key: str) -> float | None:
    v = (timing or {}).get(key)
    return float(v["value"]) if isinstance(v, dict) and v.get("value") is not None else None


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("problems", nargs="*")
    ap.add_argument("--candidates", type=int, default=4)
    args = ap.parse_args()
    paths = args.problems or sorted(str(p.relative_to(ROOT)) for lvl in ("level1", "level2")
                                    for p in (ROOT / "problems" / lvl).glob("*.py"))
    per_family: dict[str, list[tuple[float, float]]] = defaultdict(list)
    print("| problem | family | verdict | best parameters | vs eager | vs torch.compile | judged | s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    with Judge() as judge:
        for path in paths:
            started = time.monotonic()
            result = run_offline(judge, (ROOT / path).read_text(), path, EvalOptions(device="cpu"),
                                 max_candidates=args.candidates, engine=OfflineEngine("cpu"))
            took = time.monotonic() - started
            best = result.best
            if best is None:
                print(f"| {path} | - | {result.reason[:90]} | | | | {len(result.attempts)} | {took:.0f} |")
                continue
            eager, comp = _value(best.timing, "speedup_vs_eager"), _value(best.timing, "speedup_vs_compile")
            if eager and comp:
                per_family[best.proposal.family].append((eager, comp))
            params = ", ".join(f"{k}={v}" for k, v in best.proposal.params.items())
            print(f"| {path} | {best.proposal.family} | pass | {params} | {eager or 0:.2f}x | {comp or 0:.2f}x "
                  f"| {len(result.attempts)} | {took:.0f} |", flush=True)
    print("\n| family | problems | geomean vs eager | geomean vs torch.compile |\n| --- | --- | --- | --- |")
    for family, rows in sorted(per_family.items()):
        print(f"| {family} | {len(rows)} | {geomean([r[0] for r in rows]):.2f}x | {geomean([r[1] for r in rows]):.2f}x |")


if __name__ == "__main__":
    main()

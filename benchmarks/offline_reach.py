"""How much of a KernelBench checkout the offline engine reaches, from the analysis alone:
per level, the problems a family matches (by family) and, for the rest, the reason,
counted by the op it names. Nothing is judged.

Each reference is analysed by the judge (sandboxed, never in this process) at sizes
scaled down until one call fits in --budget-gb (app/batch/fit.py, the same scaling as
`kforge batch --fit-memory`); the analyses are cached in --cache, so re-running after
an engine change only re-plans.

    nice -n 15 .venv/bin/python benchmarks/offline_reach.py /tmp/KernelBench/KernelBench --levels 1 2 \\
        --backend cpu --cache /tmp/offline_reach_cache
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from agents.offline import OfflineEngine  # noqa: E402
from agents.offline.signature import from_source  # noqa: E402
from app.batch.fit import FitError, fit_problem  # noqa: E402
from sandbox import EvalOptions, Judge, ProblemError  # noqa: E402


def analysed(judge: Judge, path: Path, budget_gb: float, cache: Path, retry: bool = True) -> dict[str, Any]:
    """{"analysis", "source"} of the scaled reference, or {"error"}; cached by file name. A
    reference that cannot be brought under the budget is tried with 10x and 100x more."""
    hit = cache / f"{path.parent.name}_{path.stem}.json"
    cached = json.loads(hit.read_text()) if hit.exists() else None
    if cached is not None and (not retry or "error" not in cached):
        return cached
    options = EvalOptions(device="cpu", timeout=120)
    out: dict[str, Any] = {}
    for budget in (budget_gb, budget_gb * 10, budget_gb * 100):
        try:
            fit = fit_problem(str(path), budget, lambda src, name: judge.analyze(src, name, options))
            out = {"source": fit.source, "analysis": judge.analyze(fit.source, path.name, options)}
            break
        except (FitError, ProblemError) as exc:
            out = {"error": str(exc).splitlines()[0][:300]}
    hit.write_text(json.dumps(out))
    return out


def headline(reason: str) -> str:
    """The reason's first clause without node names: what a count groups by."""
    first = reason.split("; ")[0]
    first = re.sub(r" \((node|module) [^)]*\)", "", first)
    return first[:100]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("suite", type=Path, help="a KernelBench checkout's KernelBench/ folder")
    ap.add_argument("--levels", nargs="+", default=["1", "2"])
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--budget-gb", type=float, default=0.005,
                    help="one call's inputs and outputs in GB; small: only the analysis runs")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/offline_reach_cache"))
    ap.add_argument("--list", action="store_true", help="one line per problem too")
    ap.add_argument("--every", type=int, default=1, help="every n-th problem by number (1: all)")
    ap.add_argument("--no-retry", action="store_true", help="keep cached analysis failures (no larger budgets)")
    args = ap.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    engine = OfflineEngine(args.backend)
    with Judge(warm=True) as judge:
        for level in args.levels:
            paths = sorted((args.suite / f"level{level}").glob("*.py"),
                           key=lambda p: int(p.stem.split("_")[0]))[::args.every]
            families: Counter[str] = Counter()
            reasons: Counter[str] = Counter()
            rows = []
            for path in paths:
                got = analysed(judge, path, args.budget_gb, args.cache, not args.no_retry)
                if "error" in got:
                    reasons["analysis failed: " + got["error"][:60]] += 1
                    rows.append((path.stem, "-", "analysis failed: " + got["error"]))
                    continue
                plan = engine.plan(got["analysis"], 4, from_source(got["source"]))
                if plan.family:
                    families[plan.family] += 1
                    rows.append((path.stem, plan.family, plan.matched[0]))
                else:
                    reasons[headline(plan.reason)] += 1
                    rows.append((path.stem, "-", plan.reason[:160]))
            total = len(paths)
            print(f"\n## level {level}: {sum(families.values())} of {total} matched (backend {args.backend})\n")
            print("| family | problems |\n| --- | --- |")
            for fam, n in families.most_common():
                print(f"| {fam} | {n} |")
            print("\n| reason (no proposal) | problems |\n| --- | --- |")
            for why, n in reasons.most_common():
                print(f"| {why.replace('|', '/')} | {n} |")
            if args.list:
                print("\n| problem | family | match or reason |\n| --- | --- | --- |")
                for row in rows:
                    print("| " + " | ".join(c.replace("|", "/") for c in row) + " |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()

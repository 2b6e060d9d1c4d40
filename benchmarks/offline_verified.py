"""How much of a KernelBench checkout the offline engine VERIFIES: each (sampled) reference,
at the sizes offline_reach.py fitted it to (read from its --cache, so run that first), goes
through run_offline -- the engine's proposals judged by the real judge -- and the record
says the family, the verdict and the measured speedups over eager and torch.compile.

Records are appended to --out (JSON lines) and skipped when present: rerun to resume.

    nice -n 10 .venv/bin/python benchmarks/offline_reach.py /tmp/KernelBench/KernelBench --levels 1 2 \\
        --backend cpu --budget-gb 0.1 --cache /tmp/reach_cache
    nice -n 10 .venv/bin/python benchmarks/offline_verified.py /tmp/KernelBench/KernelBench --levels 1 2 \\
        --every 4 --cache /tmp/reach_cache --out /tmp/verified.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from agents.offline import OfflineEngine, run_offline  # noqa: E402
from benchmarks.cpu_offline_suite import _value, geomean  # noqa: E402
from sandbox import EvalOptions, Judge, ProblemError  # noqa: E402


def judged(judge: Judge, path: Path, cached: dict[str, Any], backend: str, candidates: int,
           options: EvalOptions) -> dict[str, Any]:
    record: dict[str, Any] = {"problem": f"{path.parent.name}/{path.stem}"}
    if "error" in cached:
        return {**record, "verdict": "unanalysed", "reason": cached["error"]}
    started = time.monotonic()
    try:
        result = run_offline(judge, cached["source"], path.name, options, max_candidates=candidates,
                             engine=OfflineEngine(backend))
    except ProblemError as exc:
        return {**record, "verdict": "unusable", "reason": str(exc).splitlines()[0][:300]}
    best = result.best
    record.update(family=(result.plan or {}).get("family"), seconds=round(time.monotonic() - started, 1),
                  judged=len(result.attempts), reason=result.reason[:300],
                  # Every judged kernel's verdict and failed checks: a false reject shows here, not only in best.
                  attempts=[{"verdict": a.verdict, "failed": sorted({r.split(":")[0] for r in a.reasons})}
                            for a in result.attempts])
    if best is None:
        record["verdict"] = "no proposal" if not result.attempts else "failed"
        return record
    record.update(verdict=best.verdict, family=best.proposal.family, kind=best.proposal.note.split(";")[0],
                  vs_eager=_value(best.timing, "speedup_vs_eager"), vs_compile=_value(best.timing, "speedup_vs_compile"))
    return record


def summary(records: list[dict[str, Any]]) -> None:
    by_level: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_level[r["problem"].split("/")[0]].append(r)
    for level, rs in sorted(by_level.items()):
        ok = [r for r in rs if r["verdict"] == "pass"]
        print(f"\n## {level}: {len(ok)} of {len(rs)} verified ({100 * len(ok) / max(len(rs), 1):.0f}%)\n")
        print("| family | verified | geomean vs eager | geomean vs torch.compile |\n| --- | --- | --- | --- |")
        fams: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in ok:
            fams[r["family"]].append(r)
        for fam, frs in sorted(fams.items(), key=lambda kv: -len(kv[1])):
            e = [r["vs_eager"] for r in frs if r.get("vs_eager")]
            c = [r["vs_compile"] for r in frs if r.get("vs_compile")]
            print(f"| {fam} | {len(frs)} | {geomean(e):.2f}x | {geomean(c):.2f}x |")
        e = [r["vs_eager"] for r in ok if r.get("vs_eager")]
        c = [r["vs_compile"] for r in ok if r.get("vs_compile")]
        print(f"| all | {len(ok)} | {geomean(e):.2f}x | {geomean(c):.2f}x |")
        why = Counter(f"{r['verdict']}: {(r.get('reason') or '')[:90]}" for r in rs if r["verdict"] != "pass")
        if why:
            print("\n| not verified | problems |\n| --- | --- |")
            for w, n in why.most_common():
                print(f"| {w.replace('|', '/')} | {n} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("suite", type=Path, help="a KernelBench checkout's KernelBench/ folder")
    ap.add_argument("--levels", nargs="+", default=["1", "2"])
    ap.add_argument("--every", type=int, default=1, help="every n-th problem by number (1: all)")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--candidates", type=int, default=2)
    ap.add_argument("--cache", type=Path, required=True, help="offline_reach.py's cache of fitted analyses")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--timeout", type=float, default=300, help="seconds per judge run")
    ap.add_argument("--summary-only", action="store_true")
    ap.add_argument("--redo", action="store_true", help="judge again the problems not verified before")
    ap.add_argument("--match", default="", help="only problems whose file name matches this regular expression")
    ap.add_argument("--again", action="store_true", help="judge the selected problems again, verified or not")
    args = ap.parse_args()
    lines = args.out.read_text().splitlines() if args.out.exists() else []
    latest = {r["problem"]: r for r in map(json.loads, lines)}  # the last record of a problem counts
    seen = set() if args.again else {k for k, r in latest.items() if r["verdict"] == "pass" or not args.redo}
    if not args.summary_only:
        # Triton on this CPU runs in its interpreter: correctness only, so the least timing
        timing = {} if args.backend == "cpu" else {"timing_sets": 1, "time_reps": 1, "compile_baseline": False}
        options = EvalOptions(device="cpu", timeout=args.timeout, memory_mb=6000, **timing)
        with Judge() as judge:
            for level in args.levels:
                paths = sorted((args.suite / f"level{level}").glob("*.py"), key=lambda p: int(p.name.split("_")[0]))
                for path in paths[::args.every]:
                    key = f"{path.parent.name}/{path.stem}"
                    hit = args.cache / f"{path.parent.name}_{path.stem}.json"
                    if key in seen or not hit.exists() or not re.search(args.match, path.name):
                        continue
                    record = judged(judge, path, json.loads(hit.read_text()), args.backend, args.candidates, options)
                    print(json.dumps(record), flush=True)
                    with args.out.open("a") as f:
                        f.write(json.dumps(record) + "\n")
                    latest[key] = record
    summary(list(latest.values()))


if __name__ == "__main__":
    main()

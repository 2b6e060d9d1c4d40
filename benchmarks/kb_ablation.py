"""Ablation: does the knowledge base change how many judged candidates the
offline engine needs before its best (here: first verified) kernel?

    .venv/bin/python benchmarks/kb_ablation.py [--problems 10]
    .venv/bin/python benchmarks/kb_ablation.py --backend cpu --names 10_softmax,2_gelu

For each bundled problem: a search with an empty knowledge base, then the
same search with the knowledge base the first one left behind (its lessons and
archived winner). With backend triton and no GPU "best" means the first verified
kernel (no speedups to rank by); with backend cpu the kernels are timed on the CPU
and "best" is the fastest verified one. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.offline import OfflineEngine  # noqa: E402
from agents.search import Search, SearchConfig  # noqa: E402
from knowledge_base.facade import KnowledgeBase  # noqa: E402
from sandbox import EvalOptions, Judge, list_problems  # noqa: E402


def to_best(traj) -> tuple[int | None, float]:
    """Judged candidates up to and including the best one, and the judge time spent on them."""
    attempts = traj.attempts()
    best = traj.best()
    if best is None:
        return None, sum(a.elapsed_s for a in attempts)
    n = [a.id for a in attempts].index(best.id) + 1
    return n, sum(a.elapsed_s for a in attempts[:n])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=10)
    ap.add_argument("--names", help="comma-separated problem names instead of the first --problems")
    ap.add_argument("--backend", default="triton", help="triton (untimed without a GPU) | cpu (timed C kernels)")
    args = ap.parse_args()
    problems = [p for p in list_problems(ROOT / "problems") if "error" not in p]
    problems = [p for p in problems if p["name"] in args.names.split(",")] if args.names else problems[: args.problems]
    native = args.backend == "cpu"
    options = EvalOptions(device="cpu", time_reps=None if native else 3)
    config = SearchConfig(max_rounds=0, offline_starters=4, backend=args.backend)
    rows = []
    with Judge(warm=True) as judge, tempfile.TemporaryDirectory() as tmp:
        kb = KnowledgeBase.open(Path(tmp) / "kb.sqlite")
        for p in problems:
            source = Path(p["path"]).read_text()
            result = []
            for use_kb in (False, True):
                search = Search(judge, options, config=config, offline=OfflineEngine(args.backend),
                                strategies=kb if use_kb else None, archive=kb if use_kb else None)
                t0 = time.perf_counter()
                traj = search.run(source, Path(p["path"]).name)
                result.append((*to_best(traj), time.perf_counter() - t0))
                if not use_kb:
                    kb.learn_from(traj.to_dict(), search.analysis, "cpu", args.backend, f"ablation:{p['name']}")
            rows.append((p["name"], result))
    print("| problem | without KB: candidates to best | with KB: candidates to best | without KB: judge s | with KB: judge s |")
    print("| --- | --- | --- | --- | --- |")
    for name, ((n0, j0, _), (n1, j1, _)) in rows:
        print(f"| {name} | {n0 if n0 else 'none'} | {n1 if n1 else 'none'} | {j0:.1f} | {j1:.1f} |")
    solved = [(r[0][0], r[1][0]) for _, r in rows if r[0][0] and r[1][0]]
    if solved:
        print(f"| **mean over {len(solved)} solved** | {statistics.mean(a for a, _ in solved):.2f} "
              f"| {statistics.mean(b for _, b in solved):.2f} | | |")


if __name__ == "__main__":
    main()

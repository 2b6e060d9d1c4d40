"""The tuning pass's cost and what it finds (issue 27's done-when: >= 20 variants of a
proposal timed in <= 10 s for a problem whose call takes <= 10 ms).

For each reference: the offline engine's wider space (``tuning_plan``, ``--variants``),
timed by ``Judge.tune`` with an empty native build cache (every variant compiled in the
pass), then again with the builds cached. Prints per problem the variants timed, the pass's
seconds (build included), eager's median and the tuned ranking's first against the engine's
hand-picked first guess, both from the same pass (advisory numbers, not judged speedups).

    .venv/bin/python benchmarks/tuning_pass.py problems/level1/2_gelu.py ... [--variants 24]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="+", type=Path)
    parser.add_argument("--variants", type=int, default=24)
    args = parser.parse_args()
    os.environ["KFORGE_JUDGE_NATIVE_CACHE"] = tempfile.mkdtemp(prefix="kforge-tune-bench-")  # cold builds

    from agents.offline import OfflineEngine
    from agents.offline.signature import from_source
    from sandbox import EvalOptions, Judge

    engine, options = OfflineEngine("cpu"), EvalOptions(device="cpu")
    with Judge(warm=True) as judge:
        for path in args.problems:
            reference = path.read_text()
            analysis = judge.analyze(reference, path.name, options)
            plan = engine.tuning_plan(analysis, args.variants, from_source(reference))
            sources = [p.source for p in plan.proposals]
            for build in ("cold", "cached"):
                result = judge.tune(reference, sources, path.name, options)
                order = result.order()
                best, guess = result.variants[order[0]], result.variants[0]
                print(json.dumps({
                    "problem": str(path), "builds": build, "variants": len(sources),
                    "timed": sum(v.status == "timed" for v in result.variants),
                    "not_timed": {v.index: f"{v.status}: {v.detail[:80]}" for v in result.variants
                                  if v.status != "timed"},
                    "elapsed_s": round(result.elapsed_s, 2), "build_s": round(result.build_s, 2),
                    "eager_ms": result.eager_ms and round(result.eager_ms, 4),
                    "fastest": {"params": plan.proposals[order[0]].params, "family": plan.proposals[order[0]].family,
                                "median_ms": best.median_ms and round(best.median_ms, 4)},
                    "engine_first_guess_ms": guess.median_ms and round(guess.median_ms, 4),
                    "ranking": [[plan.proposals[i].params, result.variants[i].median_ms and
                                 round(result.variants[i].median_ms, 4)] for i in order[:8]],
                    "label": result.label}), flush=True)


if __name__ == "__main__":
    main()

"""The judge's cost on one large call (issue 28): a ReLU over 1024 x 114688 fp32, KernelBench
level1/19_ReLU as `--fit-memory 1` sizes it (0.47 GB in, 0.47 GB out), judged with an
honest native kernel through `kforge eval` (process sandbox, backend cpu, no daemon).

    .venv/bin/python benchmarks/judge_large.py [--runs 2] [--rows 1024] [--cols 114688] [--search]

Prints per run the wall time, the verdict and the judge's cost by phase (`cost`), then the
median wall time. Needs ~20 GB of free memory at the default sizes. With `--search`, the
runs are judged as a search judges its candidates instead: one warm judge in this process,
the reference's trials replayed after the first (`EvalOptions.reuse_reference`), no
torch.compile baseline; each line also says whether the run was judged again
(`retimed`: its first verdict failed `timer_corroborated` only).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.sandbox.runner.test_shared_tensors import native_relu, relu_problem  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--cols", type=int, default=114688)
    parser.add_argument("--search", action="store_true", help="judge the runs as a search's candidates")
    args = parser.parse_args()
    if args.search:
        return search_runs(args.runs, args.rows, args.cols)
    folder = Path(tempfile.mkdtemp(prefix="kforge-judge-large-"))
    ref, cand = folder / "relu_large.py", folder / "relu_large_native.py"
    ref.write_text(relu_problem(args.rows, args.cols))
    cand.write_text(native_relu())
    walls = []
    for run in range(args.runs):
        t0 = time.monotonic()
        out = subprocess.run([str(ROOT / ".venv/bin/kforge"), "eval", "-r", str(ref), "-c", str(cand),
                              "--backend", "cpu", "--json", "--no-daemon", "--timeout", "600",
                              "--memory-mb", "12000"], capture_output=True, text=True, cwd=ROOT)
        walls.append(time.monotonic() - t0)
        report = json.loads(out.stdout) if out.stdout.strip() else {"verdict": "none", "reasons": [out.stderr[-500:]]}
        print(json.dumps({"run": run, "wall_s": round(walls[-1], 1), "verdict": report.get("verdict"),
                          "reasons": report.get("reasons"), "speedup": report.get("speedup"),
                          "cost": report.get("cost")}))
    print(json.dumps({"median_wall_s": round(statistics.median(walls), 1), "runs": args.runs}))


def search_runs(runs: int, rows: int, cols: int) -> None:
    from sandbox import EvalOptions, Judge

    options = EvalOptions(device="cpu", timeout=600, memory_mb=12000, compile_baseline=False, reuse_reference=True)
    walls = []
    with Judge(warm=True) as judge:
        for run in range(runs):
            t0 = time.monotonic()
            result = judge.evaluate(relu_problem(rows, cols), native_relu(), "relu_large.py", "relu_large_native.py",
                                    options)
            walls.append(time.monotonic() - t0)
            print(json.dumps({"run": run, "wall_s": round(walls[-1], 1), "verdict": result.verdict,
                              "reasons": result.reasons, "retimed": result.timing.get("retimed"),
                              "timer_corroborated": {c.name: c.detail for c in result.checks}.get("timer_corroborated"),
                              "cost": result.cost}), flush=True)
    print(json.dumps({"median_wall_s": round(statistics.median(walls), 1), "runs": runs}))


if __name__ == "__main__":
    main()

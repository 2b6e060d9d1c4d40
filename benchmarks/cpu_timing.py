"""Timing quality of the judge on the CPU, for a native kernel.

    .venv/bin/python benchmarks/cpu_timing.py [--runs 10] [--rows 1024] [--cols 4096]

1. The real judge (process sandbox, warm runner) evaluates the same native
   candidate ``--runs`` times; the spread of its candidate medians is
   (max - min) / median of the medians (target <= 2%).
2. In this process, torch.utils.benchmark.Timer times the same call (same
   library, same thread count, same OpenMP wait policy); the judge's median
   should be within 5% of it. The fused kernel's data (two inputs and an output
   of rows x cols fp32) is larger than the last-level cache, so the judge's
   cache flush changes little for it.

Prints a Markdown table (CPU model, threads, load average, date).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.utils.benchmark as tb  # noqa: E402

from sandbox import EvalOptions, Judge  # noqa: E402
from sandbox.runner.measure import timing  # noqa: E402
from sandbox.runner.native import library as native  # noqa: E402

REF = """
import torch
import torch.nn as nn
import torch.nn.functional as F
class Model(nn.Module):
    def forward(self, x, g):
        return F.gelu(x) * torch.sigmoid(g) + 0.5 * x
rows = {rows}
cols = {cols}
def get_inputs():
    return [torch.randn(rows, cols), torch.randn(rows, cols)]
def get_init_inputs():
    return []
"""
SRC = r"""
#include <math.h>
#include <stdint.h>
void gelu_gate(const float* restrict x, const float* restrict g, float* restrict y, int64_t n) {
    #pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        const float gelu = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
        y[i] = gelu / (1.0f + expf(-g[i])) + 0.5f * v;
    }
}
"""
PROTO = "void gelu_gate(const float* x, const float* g, float* y, int64_t n)"
CAND = f'''
import torch
import torch.nn as nn
from kforge_native import load_c
SRC = r"""{SRC}"""
lib = load_c(SRC, ["{PROTO}"], name="gelu_gate")
class ModelNew(nn.Module):
    def forward(self, x, g):
        x = x.contiguous(); g = g.contiguous()
        y = torch.empty_like(x)
        lib.gelu_gate(x, g, y, x.numel())
        return y
'''


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--rows", type=int, default=1024)
    p.add_argument("--cols", type=int, default=4096)
    args = p.parse_args()
    ref = REF.format(rows=args.rows, cols=args.cols)
    options = EvalOptions(device="cpu", trials=1, timing_sets=2, compile_baseline=False)
    medians, eager = [], []
    load_before = os.getloadavg()
    with Judge(warm=True) as judge:
        for i in range(args.runs):
            result = judge.evaluate(ref, CAND, options=options)
            if result.verdict != "pass":
                sys.exit(f"run {i}: {result.verdict}: {result.reasons}")
            medians.append(result.timing["candidate"]["median_ms"])
            eager.append(result.timing["baseline_eager"]["median_ms"])
            label = result.timing["label"]
            threads = result.timing["threads"]
    mid = statistics.median(medians)
    spread = (max(medians) - min(medians)) / mid

    # The same call under torch.utils.benchmark.Timer, in this process.
    torch.set_num_threads(threads)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    lib = native.load_c(SRC, [PROTO], name="gelu_gate")
    x, g = torch.randn(args.rows, args.cols), torch.randn(args.rows, args.cols)
    y = torch.empty_like(x)
    timer = tb.Timer(stmt="lib.gelu_gate(x, g, y, n)", globals={"lib": lib, "x": x, "g": g, "y": y, "n": x.numel()},
                     num_threads=threads)
    ref_ms = timer.blocked_autorange(min_run_time=3.0).median * 1e3
    load_after = os.getloadavg()
    print(f"- {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {timing.cpu_model()}; {threads} thread(s); "
          f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after (shared machine)")
    print(f"- judge label: {label}")
    print(f"- shape {args.rows} x {args.cols} fp32, {args.runs} judge runs")
    print()
    print("| measure | value |")
    print("| --- | --- |")
    print(f"| judge candidate medians (ms) | {', '.join(f'{m:.3f}' for m in medians)} |")
    print(f"| spread of medians (max - min) / median | {spread * 100:.1f}% (target <= 2%) |")
    print(f"| torch.utils.benchmark.Timer median (ms) | {ref_ms:.3f} |")
    print(f"| judge median / Timer median | {mid / ref_ms:.3f} (target within 5%) |")
    print(f"| eager baseline medians (ms), for scale | {statistics.median(eager):.3f} (median of {len(eager)}) |")


if __name__ == "__main__":
    main()

"""Issue 26's check: a baseline cache filled while the machine was loaded must not
inflate later speedups.

1. Judge a native row-norm kernel (sqrt((x*x).sum(1)), 1024 x 8192) with the judge's
   baseline cache on, while ``--load`` busy processes keep the CPUs loaded: the cache
   is filled under load.
2. Stop the load; judge the same candidate ``--runs`` times with the cache on, then
   once with it off (every baseline fresh).
3. Print each run's speedups over eager and torch.compile, where each baseline came
   from, and how far each is from the fresh run's.

    .venv/bin/python benchmarks/baseline_drift.py --runs 5 --load 4
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from sandbox import EvalOptions, Judge  # noqa: E402

REFERENCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.sqrt((x * x).sum(dim=1))


def get_inputs():
    return [torch.randn(1024, 8192)]


def get_init_inputs():
    return []
'''

CANDIDATE = '''
import torch
import torch.nn as nn
from kforge_native import load_c

SRC = r"""
#include <stdint.h>
#include <math.h>
void row_norm(const float* restrict x, float* restrict y, int64_t rows, int64_t cols) {
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        float s = 0.0f;
        #pragma omp simd reduction(+:s)
        for (int64_t c = 0; c < cols; c++) s += x[r * cols + c] * x[r * cols + c];
        y[r] = sqrtf(s);
    }
}
"""
lib = load_c(SRC, ["void row_norm(const float* x, float* y, int64_t rows, int64_t cols)"], name="row_norm")


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty(x.shape[0], dtype=x.dtype)
        lib.row_norm(x, y, x.shape[0], x.shape[1])
        return y
'''


def _busy(stop: float) -> None:
    while time.time() < stop:
        pass


def judge_once(cache: bool) -> dict:
    with Judge(warm=False) as judge:
        r = judge.evaluate(REFERENCE, CANDIDATE, "row_norm.py", "row_norm_native.py",
                           EvalOptions(device="cpu", baseline_cache=cache))
    t = r.timing
    return {"verdict": r.verdict, "reasons": r.reasons, "vs_eager": r.speedup, "vs_compile": r.speedup_compile,
            "eager": (t.get("baseline_eager") or {}).get("source"),
            "compile": (t.get("baseline_compile") or {}).get("source"),
            "load": (t.get("candidate") or {}).get("loadavg")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--load", type=int, default=4, help="busy processes while the cache is filled")
    args = ap.parse_args()
    os.environ["KFORGE_JUDGE_BASELINE_CACHE"] = tempfile.mkdtemp(prefix="kforge-drift-")
    stop = time.time() + 600
    workers = [mp.Process(target=_busy, args=(stop,), daemon=True) for _ in range(args.load)]
    for w in workers:
        w.start()
    filled = judge_once(cache=True)
    for w in workers:
        w.terminate()
    print("filled under load:", filled)
    time.sleep(20)  # let the load average settle
    fresh = judge_once(cache=False)
    print("fresh:", fresh)
    for i in range(args.runs):
        r = judge_once(cache=True)
        dev = {k: (r[k] / fresh[k] - 1) if r[k] and fresh[k] else None for k in ("vs_eager", "vs_compile")}
        print(f"run {i + 1}:", r, "deviation from fresh:", {k: f"{v:+.1%}" if v is not None else None
                                                            for k, v in dev.items()})


if __name__ == "__main__":
    main()

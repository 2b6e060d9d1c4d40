"""The offline engine's C matmul template against torch (MKL / oneDNN) on this CPU.

Renders the cpu backend's matmul candidate for `torch.matmul(a, b)` and for
`gelu(x @ W.t() + b)` (nn.Linear + GELU, where the epilogue is fused), builds it
with kforge_native, and times both against eager PyTorch with the same thread
count: median of --reps calls after warm-up, caches not flushed (GEMM is
compute-bound at these sizes). Not the judge's timing; a quick view of the GEMM.

    .venv/bin/python benchmarks/cpu_gemm.py --reps 7
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.agents.offline.cpu_harness import cpu_proposals, load_source  # noqa: E402

MATMUL = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(64, 48), torch.randn(48, 40)]


def get_init_inputs():
    return []
'''
LINEAR_GELU = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.fc = nn.Linear(i, o)

    def forward(self, x):
        return F.gelu(self.fc(x))


def get_inputs():
    return [torch.randn(64, 48)]


def get_init_inputs():
    return [48, 40]
'''


def median_ms(fn, reps: int) -> float:
    for _ in range(2):
        fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    threads = torch.get_num_threads()
    mm = load_source(cpu_proposals(MATMUL)[0].source, "bench_mm")
    print(f"threads {threads}; template parameters: {cpu_proposals(MATMUL)[0].params}")
    print("| problem | M x K x N | C template ms | eager ms | C GFLOP/s | eager GFLOP/s | C / eager speed |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for m, k, n in [(64, 64, 64), (256, 256, 256), (1024, 1024, 1024), (2048, 2048, 2048), (4096, 512, 64)]:
        a, b = torch.randn(m, k), torch.randn(k, n)
        model = mm.ModelNew()
        ours = median_ms(lambda m=model, a=a, b=b: m(a, b), args.reps)
        eager = median_ms(lambda a=a, b=b: torch.matmul(a, b), args.reps)
        flops = 2 * m * n * k / 1e6
        print(f"| matmul | {m} x {k} x {n} | {ours:.3f} | {eager:.3f} | {flops / ours:.1f} | {flops / eager:.1f} "
              f"| {eager / ours:.2f}x |")
    for m, k, n in [(512, 1024, 1024), (2048, 1024, 4096)]:
        ref = load_source(LINEAR_GELU, f"bench_ref_{m}")
        cand = load_source(cpu_proposals(LINEAR_GELU)[0].source, f"bench_lg_{m}")
        model, new = ref.Model(k, n), cand.ModelNew(k, n)
        new.load_state_dict(model.state_dict())
        x = torch.randn(m, k)
        with torch.no_grad():
            ours = median_ms(lambda f=new, x=x: f(x), args.reps)
            eager = median_ms(lambda f=model, x=x: f(x), args.reps)
        flops = 2 * m * n * k / 1e6
        print(f"| linear + gelu | {m} x {k} x {n} | {ours:.3f} | {eager:.3f} | {flops / ours:.1f} | "
              f"{flops / eager:.1f} | {eager / ours:.2f}x |")


if __name__ == "__main__":
    main()

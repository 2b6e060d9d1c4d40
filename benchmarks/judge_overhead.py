"""Judge overhead per candidate: warm runner (fork per candidate) against a
fresh runner process per candidate, measured in the same run.

    .venv/bin/python benchmarks/judge_overhead.py [--n 10] [--sandbox process]

Uses a tiny problem (a 7 x 13 elementwise op) so the kernel's own time is
negligible next to the judge's work; prints a Markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sandbox import EvalOptions, Judge  # noqa: E402
from sandbox.drivers import get_driver  # noqa: E402

REF = """
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return x * 2.0
rows = 7
cols = 13
def get_inputs():
    return [torch.randn(rows, cols)]
def get_init_inputs():
    return []
"""
CAND = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl
@triton.jit
def double_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)
class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        double_kernel[(triton.cdiv(x.numel(), 128),)](x, y, x.numel(), BLOCK=128)
        return y
'''


def timed_evals(judge: Judge, n: int, options: EvalOptions) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        result = judge.evaluate(REF, CAND, "ref.py", "cand.py", options)
        out.append(time.perf_counter() - t0)
        assert result.verdict == "pass", result.reasons
    return out


def startup(sandbox: str, n: int) -> list[float]:
    out = []
    for _ in range(n):
        driver = get_driver(sandbox)
        t0 = time.perf_counter()
        session = driver.start("cpu")
        out.append(time.perf_counter() - t0)
        driver.stop(session)
    return out


def row(name: str, xs: list[float]) -> str:
    return f"| {name} | {len(xs)} | {statistics.median(xs):.3f} | {min(xs):.3f} | {max(xs):.3f} |"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--sandbox", action="append", default=None)
    args = ap.parse_args()
    sandboxes = args.sandbox or ["process"]
    options = EvalOptions(device="cpu", time_reps=3)
    print("| measurement | n | median s | min s | max s |")
    print("| --- | --- | --- | --- | --- |")
    for sandbox in sandboxes:
        opts = EvalOptions(**{**options.__dict__, "sandbox": sandbox})
        with Judge(warm=True) as judge:
            timed_evals(judge, 1, opts)  # start the runner once
            warm = timed_evals(judge, args.n, opts)
        fresh = timed_evals(Judge(warm=False), args.n, opts)
        print(row(f"{sandbox}: evaluation, warm runner (fork per candidate)", warm))
        print(row(f"{sandbox}: evaluation, fresh runner process per candidate", fresh))
        print(row(f"{sandbox}: driver start-up until ready", startup(sandbox, max(3, args.n // 3))))


if __name__ == "__main__":
    main()

"""The issue's example, `gelu(x) * sigmoid(g) + 0.5 * x` on 2048 x 4096 fp32: the offline
engine's C elementwise candidates (every parameter set) against eager and torch.compile,
outside the judge (median of 9 calls after 2 warm-up calls, same thread count).

    .venv/bin/python benchmarks/cpu_fused_example.py
"""
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.agents.offline.cpu_harness import cpu_proposals, load_source  # noqa: E402

REF = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x, g):
        return F.gelu(x) * torch.sigmoid(g) + 0.5 * x


def get_inputs():
    return [torch.randn(8, 16), torch.randn(8, 16)]


def get_init_inputs():
    return []
'''


def med(f, n: int = 9) -> float:
    f()
    f()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def main() -> None:
    ref = load_source(REF, "bigref")
    x, g = torch.randn(2048, 4096), torch.randn(2048, 4096)
    m = ref.Model()
    eager = med(lambda: m(x, g))
    comp = torch.compile(m)
    cm = med(lambda: comp(x, g))
    print(f"threads {torch.get_num_threads()} eager {eager:.2f} ms, torch.compile {cm:.2f} ms")
    for i, p in enumerate(cpu_proposals(REF)):
        c = load_source(p.source, f"bigc{i}").ModelNew()
        assert torch.allclose(c(x, g), m(x, g), atol=1e-4, rtol=1e-4)
        t = med(lambda c=c: c(x, g))
        print(p.params, f"{t:.2f} ms, {eager / t:.2f}x eager, {cm / t:.2f}x compile")


if __name__ == "__main__":
    main()

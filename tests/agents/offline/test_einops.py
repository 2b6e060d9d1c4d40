"""A reference that imports einops (issue 57: real networks do; KernelBench level 3's Mamba2
problems import it) is judged in the sandbox: an honest native kernel passes against it, and
a candidate that imports einops is within the source policy. The offline engine's trace goes
through einops (its torch backend serves the tracer's proxies), so ``rearrange`` and
``reduce`` reach the engine as the reshapes and reductions they are, and it writes kernels
that pass for references written with them."""

from __future__ import annotations

import pytest

from agents.offline import OfflineEngine, run_offline
from sandbox import EvalOptions, Judge
from sandbox.policy import python as policy
from tests.agents.offline.cpu_harness import QUICK

REFERENCE = '''import torch
import torch.nn as nn
from einops import rearrange


class Model(nn.Module):
    def __init__(self, heads: int):
        super().__init__()
        self.heads = heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = rearrange(x, "b (h d) -> b h d", h=self.heads)
        return torch.relu(y) * 2.0


batch_size = 16
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [8]
'''


@pytest.fixture(scope="module")
def judge():
    with Judge(warm=True) as j:
        yield j


NATIVE = '''import torch
import torch.nn as nn
from einops import rearrange
from kforge_native import load_c

SRC = r"""
#include <stdint.h>
void relu2(const float* x, float* y, int64_t n) {
    #pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f;
}
"""
lib = load_c(SRC, ["void relu2(const float* x, float* y, int64_t n)"], name="relu2")


class ModelNew(nn.Module):
    def __init__(self, heads: int):
        super().__init__()
        self.heads = heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.relu2(x, y, x.numel())
        return rearrange(y, "b (h d) -> b h d", h=self.heads)
'''


def test_an_einops_reference_is_judged_and_an_honest_kernel_passes(judge) -> None:
    result = judge.evaluate(REFERENCE, NATIVE, "einops_relu.py", "native.py",
                            EvalOptions(device="cpu", timing_sets=2, time_reps=3, compile_baseline=False))
    assert result.verdict == "pass", result.reasons
    wrong = judge.evaluate(REFERENCE, NATIVE.replace("* 2.0f", "* 3.0f"), "einops_relu.py", "wrong.py",
                           EvalOptions(device="cpu", timing_sets=2, time_reps=3, compile_baseline=False))
    assert wrong.verdict == "fail" and any(r.startswith("correctness") for r in wrong.reasons), wrong.reasons


REDUCE = """import torch
import torch.nn as nn
from einops import reduce


class Model(nn.Module):
    def forward(self, x):
        return reduce(x, "b c h w -> b c", "mean")


def get_inputs():
    return [torch.randn(4, 24, 12, 10)]


def get_init_inputs():
    return []
"""


@pytest.mark.parametrize("source, family", [(REFERENCE, "pipeline"), (REDUCE, "reduction")],
                         ids=["rearrange_heads", "reduce_mean"])
def test_the_engine_traces_through_einops_and_its_kernel_passes(judge, source: str, family: str) -> None:
    result = run_offline(judge, source, "einops_ref.py", QUICK, max_candidates=1, engine=OfflineEngine("cpu"))
    assert result.best is not None and result.best.verdict == "pass", result.reason
    assert result.best.proposal.family == family


def test_a_candidate_may_import_einops() -> None:
    assert not [f for f in policy.findings(NATIVE, "c.py") if "einops" in f]

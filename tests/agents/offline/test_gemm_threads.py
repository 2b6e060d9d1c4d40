"""The engine's BLAS-rank GEMM kernels start no thread while they are timed: the timed pass
runs under a filter that kills a process for a new thread (sandbox/runner/guards/
syscall_filter.py). A product wrapped in an inactive OpenMP region (``parallel for if(0)``)
made the library's own parallel region a nested team, whose threads libgomp starts anew on
every call: KernelBench level2/51 and 81 were killed so (SIGSYS), honest kernels rejected."""

from __future__ import annotations

import pytest

from agents.offline import OfflineEngine, run_offline
from sandbox import EvalOptions, Judge

REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.tanh(self.gemm(x)) * 0.5


batch_size = 192
in_features = 1536
out_features = 1536


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
'''


@pytest.fixture(scope="module")
def judge():
    with Judge(warm=True) as j:
        yield j


def test_every_blas_gemm_proposal_passes_its_timed_pass(judge) -> None:
    options = EvalOptions(device="cpu", timing_sets=2, time_reps=3, compile_baseline=False)
    result = run_offline(judge, REFERENCE, "gemm_tanh.py", options, max_candidates=4,
                         engine=OfflineEngine("cpu"), exhaustive=True)
    assert result.attempts, result.reason
    assert any("blas" in str(a.proposal.params) for a in result.attempts), [a.proposal.params for a in result.attempts]
    failed = [(a.proposal.params, a.reasons) for a in result.attempts if a.verdict != "pass"]
    assert not failed, failed

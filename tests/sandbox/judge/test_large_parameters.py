"""A problem large by its parameters, not its inputs: a GEMM weight of 268 MB
(KernelBench level2/56 and 59 under --fit-memory). Every trial has a weight of its
own (its own seed), and the candidate's job holds every trial's, so eight trials
ran an honest kernel past the 4 GB memory limit. The reference's runner now
measures its first trial and runs the large problem's plan: two default trials,
the odd shrink and one size grown alone."""

from __future__ import annotations

from sandbox.judge import EvalOptions, Judge
from sandbox.judging.trial_plan import LARGE_TRIALS, perturbations
from sandbox.problem import load_problem

REFERENCE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, features) * 0.01)

    def forward(self, x):
        return x @ self.weight.t()


batch_size = 8
features = 8192


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
"""

CANDIDATE = '''import torch
import torch.nn as nn
from kforge_native import load_c

SRC = r"""
#include <stdint.h>
void gemv_rows(const float* x, const float* w, float* y, int64_t b, int64_t n, int64_t k) {
    for (int64_t i = 0; i < b; i++)
        for (int64_t j = 0; j < n; j++) {
            float s = 0.0f;
            const float* row = w + j * k;
            for (int64_t t = 0; t < k; t++) s += x[i * k + t] * row[t];
            y[i * n + j] = s;
        }
}
"""
lib = load_c(SRC, ["void gemv_rows(const float* x, const float* w, float* y, int64_t b, int64_t n, int64_t k)"],
             name="gemv")


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, features) * 0.01)

    def forward(self, x):
        x = x.contiguous()
        w = self.weight.contiguous()
        y = torch.empty(x.shape[0], w.shape[0], dtype=x.dtype)
        lib.gemv_rows(x, w, y, x.shape[0], w.shape[0], w.shape[1])
        return y
'''


def test_a_problem_large_by_its_parameters_runs_the_large_plan_and_fits_in_memory(tmp_path) -> None:
    path = tmp_path / "big_weight.py"
    path.write_text(REFERENCE)
    large_sets = perturbations(load_problem(path), large=True)
    assert large_sets != perturbations(load_problem(path))  # the plans differ
    options = EvalOptions(device="cpu", trials=5, timing_sets=3, time_reps=3, compile_baseline=False,
                          tolerance=(1e-3, 1e-3))
    with Judge(warm=True) as judge:
        result = judge.evaluate(REFERENCE, CANDIDATE, options=options)
    out = result.to_json()
    assert out["checks"]["runtime"] == "pass", result.reasons
    assert result.verdict == "pass", result.reasons
    # the large plan: two default trials, then the odd shrink and the batch grown alone
    assert result.perturbed == large_sets and large_sets[1] == {"batch_size": 10}
    assert len(result.seeds) - len(result.perturbed) - 3 == LARGE_TRIALS  # default trials, 3 timing sets

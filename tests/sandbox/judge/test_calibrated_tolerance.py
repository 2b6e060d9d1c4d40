"""The float32 tolerance against the reference's own rounding (issue 28: no honest kernel
rejected). A reference whose float32 result is itself off from the exact one by more than
the tolerance (here (x + 300).sum(1) - 300 * cols: the large partial sums round) rejected a
kernel that computes the same value more accurately. The judge now runs the reference again
in float64 on the trials that missed, and lets a candidate be off from that by the tolerance
plus twice the float32 reference's own worst deviation; a wrong kernel still fails."""

from __future__ import annotations

import torch

from sandbox import EvalOptions, Judge
from sandbox.verdict import compare

REFERENCE = '''"""Row sums through a large offset: the offset's partial sums round in float32."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return (x + 300.0).sum(1) - 300.0 * x.shape[1]


rows = 64
cols = 8192


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
'''

CANDIDATE = '''import torch
import torch.nn as nn
from kforge_native import load_c

SRC = r\'\'\'
#include <stdint.h>
void row_sums(const float* x, float* y, int64_t rows, int64_t cols) {
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        double acc = 0.0;
        for (int64_t c = 0; c < cols; c++) acc += x[r * cols + c];
        y[r] = (float)(acc + OFFSET);
    }
}
\'\'\'
lib = load_c(SRC, ["void row_sums(const float* x, float* y, int64_t rows, int64_t cols)"], name="row_sums")


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty(x.shape[0])
        lib.row_sums(x, y, x.shape[0], x.shape[1])
        return y
'''

OPTIONS = EvalOptions(device="cpu", timing_sets=2, time_reps=3, compile_baseline=False)


def test_a_more_accurate_kernel_passes_against_the_float64_reference_and_a_wrong_one_does_not():
    with Judge(warm=True) as judge:
        honest = judge.evaluate(REFERENCE, CANDIDATE.replace("OFFSET", "0.0"), "offset_sums.py", "sums.py", OPTIONS)
        wrong = judge.evaluate(REFERENCE, CANDIDATE.replace("OFFSET", "1.0"), "offset_sums.py", "sums.py", OPTIONS)
    assert honest.verdict == "pass", honest.reasons
    checks = {c.name: c for c in honest.checks}
    assert "float64" in checks["correctness"].detail and "in float32" in checks["correctness"].detail
    assert honest.cost.get("reference64_job_s", 0) > 0  # the float64 run, a job of its own
    assert wrong.verdict == "fail" and any(r.startswith("correctness") for r in wrong.reasons), wrong.reasons


def test_the_allowance_is_the_references_own_deviation_and_stops_where_it_is_not_rounding():
    r64 = torch.tensor([100.0, -50.0, 3.0], dtype=torch.float64)
    r = (r64 + torch.tensor([0.01, -0.004, 0.0], dtype=torch.float64)).float()  # the float32 reference's rounding
    atol = rtol = 1e-4
    assert compare.calibrated_close((r64 - 0.012).float(), r, r64, atol, rtol)  # within 1e-4 + 1e-2 + 2 x 0.01
    assert not compare.calibrated_close((r64 + 0.05).float(), r, r64, atol, rtol)
    assert compare.mismatch((r64 - 0.012).float(), r, atol, rtol) is not None  # plain: a miss
    # a float64 run that is not the same computation (5 on a scale of 100): nothing is widened
    far = (r64 + 5.0).float()
    assert not compare.calibrated_close(r64.float(), far, r64, atol, rtol)
    assert not compare.could_calibrate([far], [(r64 + 30.0).float()])
    assert compare.could_calibrate([r], [(r64 - 0.012).float()])

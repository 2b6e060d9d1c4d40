"""WRONG on purpose: the variance is the unbiased one (divided by n - 1, as torch.var does by
default), while group norm normalises with the biased one: every output is off by a small factor.

Caught by: correctness
"""

import math

import torch
import torch.nn as nn
from kforge_native import load_c

SRC = r'''
#pragma GCC optimize ("no-trapping-math", "no-math-errno")

#include <stdint.h>
#include <math.h>

/* Per (sample, group): statistics over its C/G channels of S values, then the affine per channel. */
void group_norm(const float* x, const float* w, const float* b, float* y, int64_t N, int64_t C, int64_t S,
                int64_t G, double eps) {
    const int64_t cg = C / G, len = cg * S;
    #pragma omp parallel for schedule(static) if(N * C * S > 16384)
    for (int64_t r = 0; r < N * G; r++) {
        const float* xr = x + r * len;
        float* yr = y + r * len;
        double sum = 0;
        #pragma omp simd reduction(+:sum)
        for (int64_t i = 0; i < len; i++) sum += xr[i];
        const double mean = sum / len;
        double sq = 0;
        #pragma omp simd reduction(+:sq)
        for (int64_t i = 0; i < len; i++) { const double d = xr[i] - mean; sq += d * d; }
        const float inv = (float)(1.0 / sqrt(sq / (len - 1) + eps)  /* unbiased: the mistake */), m = (float)mean;
        for (int64_t k = 0; k < cg; k++) {
            const int64_t c = (r % G) * cg + k;
            const float scale = inv * w[c], shift = b[c] - m * scale;
            #pragma omp simd
            for (int64_t s = 0; s < S; s++) yr[k * S + s] = xr[k * S + s] * scale + shift;
        }
    }
}
'''
lib = load_c(SRC, [
    "void group_norm(const float* x, const float* w, const float* b, float* y, int64_t N, int64_t C, int64_t S, int64_t G, double eps)",
], name="group_norm")

def group_norm(x: torch.Tensor, weight, bias, groups: int, eps: float) -> torch.Tensor:
    """group norm of (N, C, ...) with training-mode statistics; weight / bias may be None."""
    x = x.contiguous()
    out = torch.empty_like(x)
    weight = torch.ones(x.shape[1], dtype=x.dtype) if weight is None else weight.contiguous()
    bias = torch.zeros(x.shape[1], dtype=x.dtype) if bias is None else bias.contiguous()
    if out.numel():
        lib.group_norm(x, weight, bias, out, x.shape[0], x.shape[1], math.prod(x.shape[2:]), groups, float(eps))
    return out

class ModelNew(nn.Module):
    """Same constructor, parameters and forward signature as the reference's Model."""

    def __init__(self, num_features, num_groups) -> None:
        super().__init__()
        self.num_groups = num_groups
        self.gn = nn.Module()
        self.gn.weight = nn.Parameter(torch.empty(num_features))
        self.gn.bias = nn.Parameter(torch.empty(num_features))

    def forward(self, x) -> torch.Tensor:
        return group_norm(x, self.gn.weight, self.gn.bias, self.num_groups, 1e-05)

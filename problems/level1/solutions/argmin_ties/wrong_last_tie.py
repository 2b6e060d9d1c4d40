"""WRONG on purpose: on a tie the later index replaces the earlier one (>= instead of >), so
rows whose minimum occurs twice report its last position instead of torch's first.

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

/* out[o, i] = the first j maximising -x[o, j, i] over a contiguous (outer, red, inner) array
   (the first NaN when there is one). Each OpenMP iteration owns 64 consecutive i. */
void arg_cols(const float* x, int64_t* out, int64_t outer, int64_t red, int64_t inner) {
    const int64_t strips = (inner + 64 - 1) / 64;
    #pragma omp parallel for collapse(2) schedule(static) if(outer * red * inner > 16384)
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t t = 0; t < strips; t++) {
            const int64_t i0 = t * 64;
            const int64_t n = inner - i0 < 64 ? inner - i0 : 64;
            const float* xo = x + o * red * inner + i0;
            float best[64];
            int64_t at[64];
            #pragma omp simd
            for (int64_t i = 0; i < n; i++) { best[i] = -xo[i]; at[i] = 0; }
            for (int64_t j = 1; j < red; j++) {
                const float* xj = xo + j * inner;
                #pragma omp simd
                for (int64_t i = 0; i < n; i++) {
                    const float v = -xj[i];
                    const int better = v >= best[i] ||  /* ties move on: the mistake */ (v != v && best[i] == best[i]);
                    best[i] = better ? v : best[i];
                    at[i] = better ? j : at[i];
                }
            }
            for (int64_t i = 0; i < n; i++) out[o * inner + i0 + i] = at[i];
        }
    }
}
'''
lib = load_c(SRC, [
    "void arg_cols(const float* x, int64_t* out, int64_t outer, int64_t red, int64_t inner)",
], name="argmin_arg_cols")

def argmin(x: torch.Tensor) -> torch.Tensor:
    """argmin over dim 1, int64 indices."""
    x = x.contiguous()
    out = torch.empty([s for d, s in enumerate(x.shape) if d != 1], dtype=torch.int64, device=x.device)
    if out.numel() == 0:
        return out
    inner = math.prod(x.shape[2:])
    lib.arg_cols(x, out, out.numel() // inner, x.shape[1], inner)
    return out

class ModelNew(nn.Module):
    """Same constructor, parameters and forward signature as the reference's Model."""

    def __init__(self, dim) -> None:
        super().__init__()

    def forward(self, x) -> torch.Tensor:
        return argmin(x)

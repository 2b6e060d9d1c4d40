"""WRONG on purpose: the product runs from the first column instead of from the last (the flips
are ignored), so every column but the ends holds the wrong partial product.

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

/* y[o, j, i] = the running product of x[o, :, i] up to j (from the end) over a contiguous
   (outer, n, inner) array. Each OpenMP iteration owns a strip of at most 64 consecutive i. */
void scan_prod(const float* x, float* y, int64_t outer, int64_t n, int64_t inner) {
    const int64_t strips = (inner + 64 - 1) / 64;
    #pragma omp parallel for collapse(2) schedule(static) if(outer * n * inner > 16384)
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t t = 0; t < strips; t++) {
            const int64_t i0 = t * 64;
            const int64_t w = inner - i0 < 64 ? inner - i0 : 64;
            const float* xo = x + o * n * inner + i0;
            float* yo = y + o * n * inner + i0;
            double a[64];
            for (int64_t i = 0; i < w; i++) a[i] = 1;
            for (int64_t s = 0; s < n; s++) {
                const int64_t j = s;  /* walks forward: the mistake */
                #pragma omp simd
                for (int64_t i = 0; i < w; i++) { a[i] *= xo[j * inner + i]; yo[j * inner + i] = (float)a[i]; }
            }
        }
    }
}
'''
lib = load_c(SRC, [
    "void scan_prod(const float* x, float* y, int64_t outer, int64_t n, int64_t inner)",
], name="scan_prod")

def cumprod(x: torch.Tensor) -> torch.Tensor:
    """cumprod along dim 1, reversed."""
    x = x.contiguous()
    out = torch.empty_like(x)
    if out.numel() == 0:
        return out
    inner = math.prod(x.shape[2:])
    lib.scan_prod(x, out, x.numel() // (x.shape[1] * inner), x.shape[1], inner)
    return out

class ModelNew(nn.Module):
    """Same constructor, parameters and forward signature as the reference's Model."""

    def __init__(self, dim) -> None:
        super().__init__()

    def forward(self, x) -> torch.Tensor:
        return cumprod(x)

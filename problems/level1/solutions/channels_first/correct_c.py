"""Correct: one OpenMP iteration per (sample, channel), each writing its H x W plane from
the input's pixels, C floats apart."""

import torch
import torch.nn as nn
from kforge_native import load_c

SRC = r'''
#include <stdint.h>

/* y[n, c, p] = x[n, p, c] for the P = H * W pixels of each sample */
void channels_first(const float* x, float* y, int64_t n, int64_t p, int64_t c) {
    #pragma omp parallel for schedule(static)
    for (int64_t nc = 0; nc < n * c; nc++) {
        const int64_t s = nc / c, ch = nc % c;
        const float* src = x + s * p * c + ch;
        float* dst = y + nc * p;
        for (int64_t i = 0; i < p; i++) dst[i] = src[i * c];
    }
}
'''
lib = load_c(SRC, ["void channels_first(const float* x, float* y, int64_t n, int64_t p, int64_t c)"],
             name="channels_first")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n, h, w, c = x.shape
        y = torch.empty(n, c, h, w, dtype=x.dtype)
        lib.channels_first(x, y, n, h * w, c)
        return y

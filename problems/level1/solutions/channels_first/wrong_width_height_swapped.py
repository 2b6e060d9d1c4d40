"""WRONG: walks each channel's pixels column by column (x[n, w, h, c] order), writing an
H x W plane of the transposed image: right shape, wrong places wherever H != W.
Caught by: correctness"""

import torch
import torch.nn as nn
from kforge_native import load_c

SRC = r'''
#include <stdint.h>

void channels_first_cols(const float* x, float* y, int64_t n, int64_t h, int64_t w, int64_t c) {
    #pragma omp parallel for schedule(static)
    for (int64_t nc = 0; nc < n * c; nc++) {
        const int64_t s = nc / c, ch = nc % c;
        for (int64_t i = 0; i < h * w; i++)
            y[nc * h * w + i] = x[((s * w + i % w) * h + i / w) * c + ch];
    }
}
'''
lib = load_c(SRC, ["void channels_first_cols(const float* x, float* y, int64_t n, int64_t h, int64_t w, int64_t c)"],
             name="channels_first_cols")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n, h, w, c = x.shape
        y = torch.empty(n, c, h, w, dtype=x.dtype)
        lib.channels_first_cols(x, y, n, h, w, c)
        return y

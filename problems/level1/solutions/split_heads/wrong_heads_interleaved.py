"""WRONG: splits the features as (head_dim, heads) -- feature e = d * heads + h, the layout
of a reshape to (..., head_dim, heads) -- instead of (heads, head_dim): right shape, every
head made of the wrong features.
Caught by: correctness"""

import torch
import torch.nn as nn
from kforge_native import load_c

SRC = r'''
#include <stdint.h>

void split_heads_strided(const float* x, float* y, int64_t batch, int64_t seq, int64_t heads, int64_t d) {
    #pragma omp parallel for schedule(static)
    for (int64_t bh = 0; bh < batch * heads; bh++) {
        const int64_t b = bh / heads, h = bh % heads;
        for (int64_t s = 0; s < seq; s++)
            for (int64_t k = 0; k < d; k++)
                y[(bh * seq + s) * d + k] = x[(b * seq + s) * heads * d + k * heads + h];
    }
}
'''
lib = load_c(SRC, ["void split_heads_strided(const float* x, float* y, int64_t batch, int64_t seq, int64_t heads, "
                   "int64_t d)"], name="split_heads_strided")


class ModelNew(nn.Module):
    def __init__(self, heads: int):
        super().__init__()
        self.heads = heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        b, s, e = x.shape
        d = e // self.heads
        y = torch.empty(b, self.heads, s, d, dtype=x.dtype)
        lib.split_heads_strided(x, y, b, s, self.heads, d)
        return y

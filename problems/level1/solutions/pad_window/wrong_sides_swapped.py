"""WRONG: the top padding put at the bottom and the left at the right: right shape, the
input shifted. Caught by: correctness"""

import torch
import torch.nn as nn
from kforge_native import load_c

SRC = r'''
#include <stdint.h>
#include <string.h>

void pad_window_swapped(const float* x, float* y, int64_t n, int64_t h, int64_t w, int64_t c, int64_t top,
                        int64_t bottom, int64_t left, int64_t right) {
    const int64_t oh = h + top + bottom, ow = w + left + right;
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < n * oh; r++) {
        const int64_t s = r / oh, i = r % oh - bottom;
        float* dst = y + r * ow * c;
        if (i < 0 || i >= h) {
            memset(dst, 0, (size_t)(ow * c) * sizeof(float));
            continue;
        }
        memset(dst, 0, (size_t)(right * c) * sizeof(float));
        memcpy(dst + right * c, x + (s * h + i) * w * c, (size_t)(w * c) * sizeof(float));
        memset(dst + (right + w) * c, 0, (size_t)(left * c) * sizeof(float));
    }
}
'''
lib = load_c(SRC, ["void pad_window_swapped(const float* x, float* y, int64_t n, int64_t h, int64_t w, int64_t c, "
                   "int64_t top, int64_t bottom, int64_t left, int64_t right)"], name="pad_window_swapped")


class ModelNew(nn.Module):
    def __init__(self, top: int, bottom: int, left: int, right: int):
        super().__init__()
        self.top, self.bottom, self.left, self.right = top, bottom, left, right

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n, h, w, c = x.shape
        y = torch.empty(n, h + self.top + self.bottom, w + self.left + self.right, c, dtype=x.dtype)
        lib.pad_window_swapped(x, y, n, h, w, c, self.top, self.bottom, self.left, self.right)
        return y

"""Correct: one OpenMP iteration per output row (sample, padded row), each zeroing its padding
and copying the input row's pixels (all their channels) in one memcpy."""

import torch
import torch.nn as nn
from kforge_native import load_c

SRC = r'''
#include <stdint.h>
#include <string.h>

/* y: (n, h + top + bottom, w + left + right, c); x: (n, h, w, c) */
void pad_window(const float* x, float* y, int64_t n, int64_t h, int64_t w, int64_t c, int64_t top, int64_t bottom,
                int64_t left, int64_t right) {
    const int64_t oh = h + top + bottom, ow = w + left + right;
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < n * oh; r++) {
        const int64_t s = r / oh, i = r % oh - top;
        float* dst = y + r * ow * c;
        if (i < 0 || i >= h) {
            memset(dst, 0, (size_t)(ow * c) * sizeof(float));
            continue;
        }
        memset(dst, 0, (size_t)(left * c) * sizeof(float));
        memcpy(dst + left * c, x + (s * h + i) * w * c, (size_t)(w * c) * sizeof(float));
        memset(dst + (left + w) * c, 0, (size_t)(right * c) * sizeof(float));
    }
}
'''
lib = load_c(SRC, ["void pad_window(const float* x, float* y, int64_t n, int64_t h, int64_t w, int64_t c, "
                   "int64_t top, int64_t bottom, int64_t left, int64_t right)"], name="pad_window")


class ModelNew(nn.Module):
    def __init__(self, top: int, bottom: int, left: int, right: int):
        super().__init__()
        self.top, self.bottom, self.left, self.right = top, bottom, left, right

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n, h, w, c = x.shape
        y = torch.empty(n, h + self.top + self.bottom, w + self.left + self.right, c, dtype=x.dtype)
        lib.pad_window(x, y, n, h, w, c, self.top, self.bottom, self.left, self.right)
        return y

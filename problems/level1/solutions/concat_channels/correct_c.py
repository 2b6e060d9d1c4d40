"""Native C (cpu backend): each sample's channels of x, then of z, copied into the output row."""

import torch
import torch.nn as nn
from kforge_native import load_c

SRC = r'''
#include <stdint.h>
#include <string.h>

/* y[n] = x[n] followed by z[n]: a and b floats per sample */
void cat_samples(const float* x, const float* z, float* y, int64_t samples, int64_t a, int64_t b) {
    #pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < samples; n++) {
        memcpy(y + n * (a + b), x + n * a, (size_t)a * sizeof(float));
        memcpy(y + n * (a + b) + a, z + n * b, (size_t)b * sizeof(float));
    }
}
'''
lib = load_c(SRC, ["void cat_samples(const float* x, const float* z, float* y, int64_t samples, int64_t a, int64_t b)"],
             name="cat_samples")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        x, z = x.contiguous(), z.contiguous()
        n = x.shape[0]
        y = torch.empty(n, x.shape[1] + z.shape[1], *x.shape[2:], dtype=x.dtype)
        lib.cat_samples(x, z, y, n, x[0].numel(), z[0].numel())
        return y

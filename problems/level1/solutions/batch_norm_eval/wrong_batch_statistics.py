"""WRONG on purpose: normalises with the batch's own mean and biased variance per channel
(what batch norm does in training mode), ignoring the running statistics an eval-mode
module holds: the output is off wherever they differ from the batch's.

Caught by: correctness
"""

import torch
import torch.nn as nn
from kforge_native import load_c

SRC = r'''
#include <math.h>
#include <stdint.h>

void bn_batch(const float* x, const float* w, const float* b, float* y, int64_t N, int64_t C, int64_t S, float eps) {
    #pragma omp parallel for schedule(static) if(N * C * S > 32768)
    for (int64_t c = 0; c < C; c++) {
        double sum = 0, sq = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t i = 0; i < S; i++) { const double v = x[(n * C + c) * S + i]; sum += v; sq += v * v; }
        const double mean = sum / (N * S), var = sq / (N * S) - mean * mean;
        const float scale = w[c] / sqrtf((float)var + eps), shift = b[c] - (float)mean * scale;
        for (int64_t n = 0; n < N; n++)
            for (int64_t i = 0; i < S; i++) y[(n * C + c) * S + i] = x[(n * C + c) * S + i] * scale + shift;
    }
}
'''
lib = load_c(SRC, ["void bn_batch(const float* x, const float* w, const float* b, float* y, int64_t N, int64_t C, "
                   "int64_t S, float eps)"], name="bn_batch")


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features, eps=1e-3)
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n, c = x.shape[:2]
        lib.bn_batch(x, self.bn.weight.contiguous(), self.bn.bias.contiguous(), y, n, c, x[0, 0].numel(), self.bn.eps)
        return y

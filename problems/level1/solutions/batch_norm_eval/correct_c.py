"""Eval-mode batch norm in C: per channel, scale = weight / sqrt(running_var + eps) and
shift = bias - running_mean * scale are computed once, then every (sample, channel) plane
is one vectorised multiply-add, one plane per OpenMP iteration."""

import torch
import torch.nn as nn
from kforge_native import load_c

SRC = r'''
#include <math.h>
#include <stdint.h>

void bn_eval(const float* x, const float* mean, const float* var, const float* w, const float* b, float* y,
             int64_t N, int64_t C, int64_t S, float eps) {
    #pragma omp parallel for schedule(static) if(N * C * S > 32768)
    for (int64_t p = 0; p < N * C; p++) {
        const int64_t c = p % C;
        const float scale = w[c] / sqrtf(var[c] + eps), shift = b[c] - mean[c] * scale;
        const float* xp = x + p * S;
        float* yp = y + p * S;
        #pragma omp simd
        for (int64_t i = 0; i < S; i++) yp[i] = xp[i] * scale + shift;
    }
}
'''
lib = load_c(SRC, ["void bn_eval(const float* x, const float* mean, const float* var, const float* w, const float* b, "
                   "float* y, int64_t N, int64_t C, int64_t S, float eps)"], name="bn_eval")


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features, eps=1e-3)
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n, c = x.shape[:2]
        bn = self.bn
        lib.bn_eval(x, bn.running_mean.contiguous(), bn.running_var.contiguous(), bn.weight.contiguous(),
                    bn.bias.contiguous(), y, n, c, x[0, 0].numel(), bn.eps)
        return y

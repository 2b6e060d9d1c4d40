"""WRONG: every query attends to every key, its own future included (the causal mask is lost).
Caught by: correctness

Otherwise the same C rows: the scores into a scratch row, their maximum, exp-weights."""

import math

import torch
import torch.nn as nn
from kforge_native import load_c

SRC = r'''
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

void causal_rows(const float* q, const float* k, const float* v, float* out, int64_t BH, int64_t L, int64_t D,
                 float scale) {
    #pragma omp parallel for collapse(2) schedule(static)
    for (int64_t r = 0; r < BH; r++)
    for (int64_t i = 0; i < L; i++) {
        float* p = (float*)malloc(sizeof(float) * (size_t)L);
        const float* qi = q + (r * L + i) * D;
        float top = -INFINITY;
        for (int64_t j = 0; j < L; j++) {
            const float* kj = k + (r * L + j) * D;
            float dot = 0.0f;
            for (int64_t d = 0; d < D; d++) dot += qi[d] * kj[d];
            p[j] = dot * scale;
            if (p[j] > top) top = p[j];
        }
        float total = 0.0f;
        for (int64_t j = 0; j < L; j++) { p[j] = expf(p[j] - top); total += p[j]; }
        float* o = out + (r * L + i) * D;
        for (int64_t d = 0; d < D; d++) o[d] = 0.0f;
        for (int64_t j = 0; j < L; j++) {
            const float* vj = v + (r * L + j) * D;
            const float w = p[j] / total;
            for (int64_t d = 0; d < D; d++) o[d] += w * vj[d];
        }
        free(p);
    }
}
'''
lib = load_c(SRC, ["void causal_rows(const float* q, const float* k, const float* v, float* out, int64_t BH, "
                   "int64_t L, int64_t D, float scale)"], name="attention_rows_unmasked")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        L, D = q.shape[-2], q.shape[-1]
        out = torch.empty_like(q)
        lib.causal_rows(q, k, v, out, q.numel() // (L * D), L, D, 1.0 / math.sqrt(D))
        return out

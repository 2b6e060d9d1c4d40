"""WRONG on purpose: the norms and the projections are C kernels, but the attention itself is
handed to torch's F.scaled_dot_product_attention, the op the reference runs.

Caught by: no_reference_ops
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from kforge_native import load_c

SRC = r'''
#include <math.h>
#include <stdint.h>

static inline float dot(const float* a, const float* b, int64_t n) {
    float acc = 0.0f;
    #pragma omp simd reduction(+:acc)
    for (int64_t i = 0; i < n; i++) acc += a[i] * b[i];
    return acc;
}

/* y (M, D) = LayerNorm of each row of x (M, D), biased variance, then * w + b. */
void layer_norm(const float* x, const float* w, const float* b, float* y, int64_t M, int64_t D, float eps) {
    #pragma omp parallel for schedule(static)
    for (int64_t m = 0; m < M; m++) {
        const float* xr = x + m * D;
        float* yr = y + m * D;
        float sum = 0.0f;
        #pragma omp simd reduction(+:sum)
        for (int64_t d = 0; d < D; d++) sum += xr[d];
        const float mean = sum / (float)D;
        float sq = 0.0f;
        #pragma omp simd reduction(+:sq)
        for (int64_t d = 0; d < D; d++) { const float c = xr[d] - mean; sq += c * c; }
        const float inv = 1.0f / sqrtf(sq / (float)D + eps);
        #pragma omp simd
        for (int64_t d = 0; d < D; d++) yr[d] = (xr[d] - mean) * inv * w[d] + b[d];
    }
}

/* y (M, N) = x (M, K) @ w (N, K)^T + b, then the exact GELU when gelu is not 0. */
void linear(const float* x, const float* w, const float* b, float* y, int64_t M, int64_t K, int64_t N, int gelu) {
    #pragma omp parallel for collapse(2) schedule(static)
    for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
        const float v = dot(x + m * K, w + n * K, K) + b[n];
        y[m * N + n] = gelu ? 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)) : v;
    }
}

/* y (M, N) = r (M, N) + x (M, K) @ w (N, K)^T + b. */
void linear_residual(const float* x, const float* w, const float* b, const float* r, float* y, int64_t M,
                     int64_t K, int64_t N) {
    #pragma omp parallel for collapse(2) schedule(static)
    for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) y[m * N + n] = r[m * N + n] + (dot(x + m * K, w + n * K, K) + b[n]);
}
'''
lib = load_c(SRC, [
    "void layer_norm(const float* x, const float* w, const float* b, float* y, int64_t M, int64_t D, float eps)",
    "void linear(const float* x, const float* w, const float* b, float* y, int64_t M, int64_t K, int64_t N, "
    "int gelu)",
    "void linear_residual(const float* x, const float* w, const float* b, const float* r, float* y, int64_t M, "
    "int64_t K, int64_t N)",
], name="transformer_block_no_attention")


def layer_norm(x: torch.Tensor, norm: nn.LayerNorm) -> torch.Tensor:
    y = torch.empty_like(x)
    lib.layer_norm(x, norm.weight.contiguous(), norm.bias.contiguous(), y, x.shape[0], x.shape[1], norm.eps)
    return y


def linear(x: torch.Tensor, layer: nn.Linear, gelu: bool = False) -> torch.Tensor:
    y = torch.empty(x.shape[0], layer.weight.shape[0], dtype=x.dtype)
    lib.linear(x, layer.weight.contiguous(), layer.bias.contiguous(), y, x.shape[0], x.shape[1], y.shape[1],
               int(gelu))
    return y


def linear_residual(x: torch.Tensor, layer: nn.Linear, residual: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(residual)
    lib.linear_residual(x, layer.weight.contiguous(), layer.bias.contiguous(), residual, y, x.shape[0], x.shape[1],
                        y.shape[1])
    return y


class ModelNew(nn.Module):
    def __init__(self, dim: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.norm1 = nn.LayerNorm(dim)
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, dim = x.shape
        head_dim = dim // self.n_heads
        rows = x.contiguous().view(batch * seq, dim)
        a = layer_norm(rows, self.norm1)
        q, k, v = linear(a, self.q), linear(a, self.k), linear(a, self.v)
        q, k, v = (t.view(batch, seq, self.n_heads, head_dim).transpose(1, 2) for t in (q, k, v))
        heads = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(batch * seq, dim)
        h = linear_residual(heads, self.out, rows)
        y = linear_residual(linear(layer_norm(h, self.norm2), self.fc1, gelu=True), self.fc2, h)
        return y.view(batch, seq, dim)

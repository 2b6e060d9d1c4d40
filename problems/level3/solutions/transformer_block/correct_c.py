"""The pre-norm transformer block in C, four kernels over (tokens, features) row-major
matrices:

- LayerNorm, one row per OpenMP iteration (mean, then the centred variance, then the
  affine);
- a linear layer y = x W^T + b with an optional exact GELU, and one that adds a
  residual; one output element per iteration, each a contiguous dot product of a row
  of x with a row of W;
- attention with an online softmax: one (sample, head, query) per iteration keeps a
  running maximum and sum and rescales its output row when the maximum grows, so the
  scores are never stored. q, k, v and the output stay (tokens, n_heads * head_dim):
  head h is a column block, read with the row stride, so no transposes are needed."""

import math

import torch
import torch.nn as nn

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

/* o = softmax(q k^T * scale) v per (sample, head), no mask. q, k, v, o: (B * L, H * E) row-major,
   head h in columns h * E .. h * E + E - 1. */
void attention(const float* q, const float* k, const float* v, float* o, int64_t B, int64_t L, int64_t H,
               int64_t E, float scale) {
    const int64_t D = H * E;
    #pragma omp parallel for collapse(3) schedule(static)
    for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < H; h++)
    for (int64_t i = 0; i < L; i++) {
        const float* qi = q + (b * L + i) * D + h * E;
        float* oi = o + (b * L + i) * D + h * E;
        float top = -INFINITY, total = 0.0f;
        for (int64_t e = 0; e < E; e++) oi[e] = 0.0f;
        for (int64_t j = 0; j < L; j++) {
            const float s = dot(qi, k + (b * L + j) * D + h * E, E) * scale;
            if (s > top) {  /* a new maximum: rescale what was summed against the old one */
                const float c = expf(top - s);
                total *= c;
                for (int64_t e = 0; e < E; e++) oi[e] *= c;
                top = s;
            }
            const float p = expf(s - top);
            const float* vj = v + (b * L + j) * D + h * E;
            total += p;
            for (int64_t e = 0; e < E; e++) oi[e] += p * vj[e];
        }
        for (int64_t e = 0; e < E; e++) oi[e] /= total;
    }
}
'''
lib = load_c(SRC, [
    "void layer_norm(const float* x, const float* w, const float* b, float* y, int64_t M, int64_t D, float eps)",
    "void linear(const float* x, const float* w, const float* b, float* y, int64_t M, int64_t K, int64_t N, "
    "int gelu)",
    "void linear_residual(const float* x, const float* w, const float* b, const float* r, float* y, int64_t M, "
    "int64_t K, int64_t N)",
    "void attention(const float* q, const float* k, const float* v, float* o, int64_t B, int64_t L, int64_t H, "
    "int64_t E, float scale)",
], name="transformer_block")


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
        heads = torch.empty_like(q)
        lib.attention(q, k, v, heads, batch, seq, self.n_heads, head_dim, 1.0 / math.sqrt(head_dim))
        h = linear_residual(heads, self.out, rows)
        y = linear_residual(linear(layer_norm(h, self.norm2), self.fc1, gelu=True), self.fc2, h)
        return y.view(batch, seq, dim)

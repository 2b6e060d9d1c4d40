"""WRONG on purpose: max-pools in ceil mode, so the odd last row and column of the 23 x 19 map
become windows of their own (12 x 10 pooled, not 11 x 9) that the reference's floor-mode pool
drops, and the global average takes them in.

Caught by: correctness
"""

import torch
import torch.nn as nn

from kforge_native import load_c

SRC = r'''
#include <math.h>
#include <stdint.h>

/* The 3x3, padding-1 convolution of one sample's C planes (H x W) with one output
   channel's weights wk (C, 3, 3), at row i, column j, without the bias. */
static inline float conv3x3_at(const float* xs, const float* wk, int64_t C, int64_t H, int64_t W,
                               int64_t i, int64_t j) {
    float acc = 0.0f;
    for (int64_t c = 0; c < C; c++) {
        const float* xp = xs + c * H * W;
        const float* wp = wk + c * 9;
        for (int64_t a = 0; a < 3; a++) {
            const int64_t r = i + a - 1;
            if (r < 0 || r >= H) continue;
            for (int64_t b = 0; b < 3; b++) {
                const int64_t s = j + b - 1;
                if (s >= 0 && s < W) acc += xp[r * W + s] * wp[a * 3 + b];
            }
        }
    }
    return acc;
}

/* y (N, K, (H + 1) / 2, (W + 1) / 2) = max-pool 2x2 (ceil mode) of relu(bn(conv3x3(x, w) + bias));
   x (N, C, H, W), w (K, C, 3, 3); bn in eval mode from its running statistics. */
void conv_bn_relu_pool(const float* x, const float* w, const float* bias, const float* mean, const float* var,
                       const float* gamma, const float* beta, float* y, int64_t N, int64_t C, int64_t H,
                       int64_t W, int64_t K, float eps) {
    const int64_t PH = (H + 1) / 2, PW = (W + 1) / 2;
    #pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < N; n++)
    for (int64_t k = 0; k < K; k++) {
        const float scale = gamma[k] / sqrtf(var[k] + eps);
        const float shift = beta[k] + (bias[k] - mean[k]) * scale;
        const float* xs = x + n * C * H * W;
        const float* wk = w + k * C * 9;
        float* yp = y + (n * K + k) * PH * PW;
        for (int64_t i = 0; i < PH; i++)
        for (int64_t j = 0; j < PW; j++) {
            float top = 0.0f;  /* the max of ReLU outputs is at least 0 */
            for (int64_t a = 0; a < 2; a++)
            for (int64_t b = 0; b < 2; b++) {
                if (2 * i + a >= H || 2 * j + b >= W) continue;
                const float v = conv3x3_at(xs, wk, C, H, W, 2 * i + a, 2 * j + b) * scale + shift;
                if (v > top) top = v;
            }
            yp[i * PW + j] = top;
        }
    }
}

/* y (N, K) = the mean over H x W of relu(conv3x3(x, w) + bias); x (N, C, H, W), w (K, C, 3, 3). */
void conv_relu_mean(const float* x, const float* w, const float* bias, float* y, int64_t N, int64_t C,
                    int64_t H, int64_t W, int64_t K) {
    #pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < N; n++)
    for (int64_t k = 0; k < K; k++) {
        const float* xs = x + n * C * H * W;
        const float* wk = w + k * C * 9;
        float total = 0.0f;
        for (int64_t i = 0; i < H; i++)
        for (int64_t j = 0; j < W; j++) {
            const float v = conv3x3_at(xs, wk, C, H, W, i, j) + bias[k];
            total += v > 0.0f ? v : 0.0f;
        }
        y[n * K + k] = total / (float)(H * W);
    }
}

/* y (M, N) = x (M, K) @ w (N, K)^T + b, then ReLU when relu is not 0. */
void linear(const float* x, const float* w, const float* b, float* y, int64_t M, int64_t K, int64_t N, int relu) {
    #pragma omp parallel for collapse(2) schedule(static)
    for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
        const float* xr = x + m * K;
        const float* wr = w + n * K;
        float acc = 0.0f;
        #pragma omp simd reduction(+:acc)
        for (int64_t k = 0; k < K; k++) acc += xr[k] * wr[k];
        acc += b[n];
        y[m * N + n] = relu && acc < 0.0f ? 0.0f : acc;
    }
}
'''
lib = load_c(SRC, [
    "void conv_bn_relu_pool(const float* x, const float* w, const float* bias, const float* mean, const float* var, "
    "const float* gamma, const float* beta, float* y, int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, "
    "float eps)",
    "void conv_relu_mean(const float* x, const float* w, const float* bias, float* y, int64_t N, int64_t C, "
    "int64_t H, int64_t W, int64_t K)",
    "void linear(const float* x, const float* w, const float* b, float* y, int64_t M, int64_t K, int64_t N, "
    "int relu)",
], name="small_conv_net_ceil_pool")


def linear(x: torch.Tensor, layer: nn.Linear, relu: bool) -> torch.Tensor:
    y = torch.empty(x.shape[0], layer.weight.shape[0], dtype=x.dtype)
    lib.linear(x, layer.weight.contiguous(), layer.bias.contiguous(), y, x.shape[0], x.shape[1], y.shape[1],
               int(relu))
    return y


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, channels: int, hidden: int, num_classes: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, channels, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, 2 * channels, kernel_size=3, padding=1)
        self.fc1 = nn.Linear(2 * channels, hidden)
        self.fc2 = nn.Linear(hidden, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n, c, h, w = x.shape
        c1, c2 = self.conv1.weight.shape[0], self.conv2.weight.shape[0]
        bn = self.bn1
        ph, pw = (h + 1) // 2, (w + 1) // 2
        pooled = torch.empty(n, c1, ph, pw, dtype=x.dtype)
        lib.conv_bn_relu_pool(x, self.conv1.weight.contiguous(), self.conv1.bias.contiguous(),
                              bn.running_mean.contiguous(), bn.running_var.contiguous(), bn.weight.contiguous(),
                              bn.bias.contiguous(), pooled, n, c, h, w, c1, bn.eps)
        features = torch.empty(n, c2, dtype=x.dtype)
        lib.conv_relu_mean(pooled, self.conv2.weight.contiguous(), self.conv2.bias.contiguous(), features, n, c1,
                           ph, pw, c2)
        return linear(linear(features, self.fc1, relu=True), self.fc2, relu=False)

"""Batched matmul, scale and a learned bias over the last dimension:
y[b] = (a[b] @ c[b]) * scale + bias."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n: int, scale: float):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(n))
        self.scale = scale

    def forward(self, a: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, c) * self.scale + self.bias


batch_size = 3
M = 41
K = 37
N = 43


def get_inputs():
    return [torch.randn(batch_size, M, K), torch.randn(batch_size, K, N)]


def get_init_inputs():
    return [N, 0.8]

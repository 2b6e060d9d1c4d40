"""Matmul, scale, residual add: y = (x @ w) * scale + residual."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor, w: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return torch.matmul(x, w) * self.scale + residual


M = 53
K = 67
N = 45


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N), torch.randn(M, N)]


def get_init_inputs():
    return [0.37]

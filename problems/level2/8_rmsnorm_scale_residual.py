"""RMSNorm written out in torch ops, then a scale and a residual add:
y = x * rsqrt(mean(x^2) + eps) * weight * scale + residual."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int, scale: float):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim) * 0.3 + 1.0)
        self.scale = scale
        self.eps = 1e-6

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        normed = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return normed * self.weight * self.scale + residual


batch_size = 3
seq_len = 37
dim = 293


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim), torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return [dim, 0.5]

"""Elementwise chain: y = clamp(x * alpha + beta, -1, 1) * x."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, alpha: float, beta: float):
        super().__init__()
        self.alpha = alpha
        self.beta = beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(x * self.alpha + self.beta, -1.0, 1.0) * x


batch_size = 23
dim = 1543


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [1.5, 0.25]

"""Inclusive prefix sum along the last dimension: y[i, j] = sum_{k <= j} x[i, k]."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=1)


batch_size = 27
dim = 371


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []

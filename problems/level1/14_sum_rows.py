"""Sum over the last dimension of a 2-D tensor: y[i] = sum_j x[i, j]."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=1)


batch_size = 41
dim = 1531


def get_inputs():
    return [torch.randn(batch_size, dim).add(1.0)]


def get_init_inputs():
    return []

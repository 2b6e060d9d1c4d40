"""ReLU followed by a scale: the smallest elementwise chain."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) * self.scale


batch_size = 19
dim = 1531


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [1.7]

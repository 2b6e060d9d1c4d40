"""Leaky ReLU with a slope given at construction: y = x if x >= 0 else slope * x."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(x, self.negative_slope)


batch_size = 31
dim = 1531


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [0.07]

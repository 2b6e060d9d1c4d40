"""Logistic sigmoid of a 2-D tensor: y = 1 / (1 + exp(-x))."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x)


batch_size = 29
dim = 1373


def get_inputs():
    return [torch.randn(batch_size, dim).mul(2.0)]


def get_init_inputs():
    return []

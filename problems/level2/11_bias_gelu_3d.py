"""Bias add broadcast over the last dimension of a 3-D tensor, then exact GELU:
y = gelu(x + bias), bias of shape (C,)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x + self.bias)


batch_size = 4
seq_len = 33
dim = 257


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return [dim]

"""SiLU (swish) of a 3-D tensor: y = x * sigmoid(x)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(x)


batch_size = 5
seq_len = 67
dim = 97


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim).mul(2.0)]


def get_init_inputs():
    return []

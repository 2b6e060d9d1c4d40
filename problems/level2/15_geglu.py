"""GEGLU activation: split the last dimension into halves (a, b), y = gelu(a) * b."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = x.chunk(2, dim=-1)
        return F.gelu(a) * b


batch_size = 3
seq_len = 19
hidden = 389


def get_inputs():
    return [torch.randn(batch_size, seq_len, 2 * hidden)]


def get_init_inputs():
    return []

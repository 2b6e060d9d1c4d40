"""Mean over the last dimension of a 3-D tensor: (B, T, C) -> (B, T)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=-1)


batch_size = 4
seq_len = 31
dim = 389


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return []

"""The strictly lower triangle of a batch of matrices: y[b, i, j] = x[b, i, j] where j < i,
else 0 (torch.tril with diagonal -1)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tril(x, diagonal=-1)


batch_size = 3
rows = 67
cols = 90


def get_inputs():
    return [torch.randn(batch_size, rows, cols)]


def get_init_inputs():
    return []

"""Squeeze-and-excite style gate: each (batch, channel) row is scaled by the
sigmoid of its own mean, y = x * sigmoid(mean(x, dim=-1, keepdim=True))."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x.mean(dim=-1, keepdim=True))


batch_size = 4
channels = 37
length = 301


def get_inputs():
    return [torch.randn(batch_size, channels, length).add(0.3)]


def get_init_inputs():
    return []

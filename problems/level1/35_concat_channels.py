"""Channel concatenation, as a DenseNet block grows its features: y = cat([x, z], dim=1)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, z], dim=1)


batch_size = 5
channels = 24
growth = 13
height = 9
width = 11


def get_inputs():
    return [torch.randn(batch_size, channels, height, width), torch.randn(batch_size, growth, height, width)]


def get_init_inputs():
    return []

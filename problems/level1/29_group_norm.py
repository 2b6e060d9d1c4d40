"""Group norm in training mode: each sample's channels split into num_groups groups, each
group normalised over its channels and spatial positions with the biased variance, then a
per-channel weight and bias (initialised away from 1 and 0 so that dropping them shows)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num_features: int, num_groups: int):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)
        nn.init.uniform_(self.gn.weight, 0.5, 1.5)
        nn.init.uniform_(self.gn.bias, -0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gn(x)


batch_size = 3
num_groups = 4
height = 7
width = 9


def get_inputs():
    return [torch.randn(batch_size, num_groups * 3, height, width).mul(2.0).add(1.0)]


def get_init_inputs():
    return [num_groups * 3, num_groups]

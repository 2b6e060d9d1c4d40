"""Batch norm in eval mode: every channel is normalised with the running mean and variance
the module holds (set away from 0 and 1 here so that ignoring them shows), not with the
batch's statistics, then scaled and shifted by its weight and bias."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features, eps=1e-3)
        nn.init.uniform_(self.bn.weight, 0.5, 1.5)
        nn.init.uniform_(self.bn.bias, -0.5, 0.5)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-1.0, 1.0)
            self.bn.running_var.uniform_(0.5, 2.0)
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


batch_size = 4
num_features = 16
height = 24
width = 20


def get_inputs():
    return [torch.randn(batch_size, num_features, height, width).mul(1.5).add(0.5)]


def get_init_inputs():
    return [num_features]

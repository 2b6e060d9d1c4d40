"""Hardtanh with bounds given at construction: y = clamp(x, min_val, max_val)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, min_val: float, max_val: float):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardtanh(x, self.min_val, self.max_val)


batch_size = 27
dim = 1123


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [-0.4, 0.7]

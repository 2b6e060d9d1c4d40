"""ELU with alpha given at construction: y = x if x > 0 else alpha * (exp(x) - 1)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.elu(x, alpha=self.alpha)


batch_size = 25
dim = 1279


def get_inputs():
    return [torch.randn(batch_size, dim).mul(2.0)]


def get_init_inputs():
    return [1.3]

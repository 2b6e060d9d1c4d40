"""RMSNorm over the last dimension with a learned weight:
y = x / sqrt(mean(x^2) + eps) * weight."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.RMSNorm(dim, eps=1e-6)
        with torch.no_grad():
            self.norm.weight.normal_(1.0, 0.3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


batch_size = 43
dim = 917


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]

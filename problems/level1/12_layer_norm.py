"""LayerNorm over the last dimension with a learned (non-trivial) weight and bias:
y = (x - mean) / sqrt(var + eps) * weight + bias, var biased."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=1e-5)
        with torch.no_grad():  # away from ones/zeros, so a kernel that drops the affine is caught
            self.norm.weight.normal_(1.0, 0.3)
            self.norm.bias.normal_(0.0, 0.3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


batch_size = 5
seq_len = 29
dim = 283


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim).mul(2.0).add(0.5)]


def get_init_inputs():
    return [dim]

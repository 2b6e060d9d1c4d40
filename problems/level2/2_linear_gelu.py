"""Linear layer followed by exact (erf) GELU: gelu(x @ W^T + b)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.linear(x))


batch_size = 39
in_features = 77
out_features = 61


def get_inputs():
    # Scaled so the pre-activations reach the range where tanh-GELU and erf-GELU differ.
    return [torch.randn(batch_size, in_features).mul(3.0)]


def get_init_inputs():
    return [in_features, out_features]

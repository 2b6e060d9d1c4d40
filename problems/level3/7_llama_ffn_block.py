"""LLaMA-style feed-forward block: RMSNorm (learned weight), gated SiLU MLP
without biases, residual: y = x + down(silu(gate(h)) * up(h)), h = rmsnorm(x)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.norm_weight = nn.Parameter(torch.randn(dim) * 0.3 + 1.0)
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)
        self.eps = 1e-6

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.norm_weight
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


batch_size = 2
seq_len = 19
dim = 48
hidden = 64


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return [dim, hidden]

"""Attention heads split out of a projection, as a transformer block does before its
attention: (batch, seq, heads * head_dim) viewed as (batch, seq, heads, head_dim), then
heads moved before the sequence and made contiguous: y[b, h, s, d] = x[b, s, h * head_dim + d]."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, heads: int):
        super().__init__()
        self.heads = heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, e = x.shape
        return x.view(b, s, self.heads, e // self.heads).transpose(1, 2).contiguous()


batch_size = 3
seq_len = 37
heads = 5
head_dim = 24


def get_inputs():
    return [torch.randn(batch_size, seq_len, heads * head_dim)]


def get_init_inputs():
    return [heads]

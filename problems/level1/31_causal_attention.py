"""Causal scaled dot-product attention over (batch, heads, sequence, head_dim):
out[b, h, i] = sum_{j <= i} softmax_j(q[b, h, i] . k[b, h, j] / sqrt(head_dim)) v[b, h, j]."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


batch_size = 2
heads = 3
seq_len = 77
head_dim = 40


def get_inputs():
    return [torch.randn(batch_size, heads, seq_len, head_dim), torch.randn(batch_size, heads, seq_len, head_dim),
            torch.randn(batch_size, heads, seq_len, head_dim)]


def get_init_inputs():
    return []

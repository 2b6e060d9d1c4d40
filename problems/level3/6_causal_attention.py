"""Causal scaled dot-product attention for one head per batch element:
query i attends to keys 0..i, out = softmax(q k^T / sqrt(d) + causal mask) v."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


batch_size = 3
seq_len = 37
head_dim = 20


def get_inputs():
    return [torch.randn(batch_size, seq_len, head_dim), torch.randn(batch_size, seq_len, head_dim),
            torch.randn(batch_size, seq_len, head_dim)]


def get_init_inputs():
    return []

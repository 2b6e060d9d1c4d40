"""One attention head, written out: softmax(q @ k^T / sqrt(d)) @ v for q, k, v of
shape (batch, seq, d)."""

import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        return torch.matmul(torch.softmax(scores, dim=-1), v)


batch_size = 4
seq_len = 41
head_dim = 24


def get_inputs():
    return [torch.randn(batch_size, seq_len, head_dim), torch.randn(batch_size, seq_len, head_dim),
            torch.randn(batch_size, seq_len, head_dim)]


def get_init_inputs():
    return []

"""Pre-norm transformer encoder block, no dropout, no mask:

    h = x + out(attention(q(a), k(a), v(a))),  a = norm1(x)
    y = h + fc2(gelu(fc1(norm2(h))))

Multi-head self-attention over the whole sequence with separate q / k / v / out
projections; head h takes features h * head_dim .. (h + 1) * head_dim - 1. The FFN is
4 * dim wide with exact (erf) GELU. The embedding width is n_heads * head_dim, derived
in code so any head_dim stays consistent; the LayerNorms have non-trivial affines."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, dim: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.norm1 = nn.LayerNorm(dim)
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)
        with torch.no_grad():
            for norm in (self.norm1, self.norm2):
                norm.weight.normal_(1.0, 0.3)
                norm.bias.normal_(0.0, 0.3)

    def split_heads(self, t: torch.Tensor) -> torch.Tensor:
        batch, seq, dim = t.shape
        return t.reshape(batch, seq, self.n_heads, dim // self.n_heads).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, dim = x.shape
        a = self.norm1(x)
        heads = F.scaled_dot_product_attention(self.split_heads(self.q(a)), self.split_heads(self.k(a)),
                                               self.split_heads(self.v(a)))
        h = x + self.out(heads.transpose(1, 2).reshape(batch, seq, dim))
        return h + self.fc2(F.gelu(self.fc1(self.norm2(h))))


batch_size = 2
seq_len = 27
n_heads = 3
head_dim = 13


def get_inputs():
    return [torch.randn(batch_size, seq_len, n_heads * head_dim)]


def get_init_inputs():
    return [n_heads * head_dim, n_heads]

"""Multi-head self-attention: a fused QKV projection, scaled dot-product
attention per head, and an output projection. The embedding width is
n_heads * head_dim, derived in code so any head_dim stays consistent."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, embed_dim: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, embed = x.shape
        head_dim = embed // self.n_heads
        qkv = self.qkv(x).reshape(batch, seq, 3, self.n_heads, head_dim).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2])
        return self.proj(out.transpose(1, 2).reshape(batch, seq, embed))


batch_size = 2
seq_len = 29
n_heads = 4
head_dim = 12


def get_inputs():
    return [torch.randn(batch_size, seq_len, n_heads * head_dim)]


def get_init_inputs():
    return [n_heads * head_dim, n_heads]

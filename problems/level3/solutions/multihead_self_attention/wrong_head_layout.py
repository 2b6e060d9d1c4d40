"""WRONG on purpose: takes head h's feature d from column d * H + h (a (D, H) split) instead of h * D + d.

Caught by: correctness
"""
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + rk
        x = tl.load(x_ptr + rm[:, None] * K + k[None, :], mask=(rm[:, None] < M) & (k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * K + k[:, None], mask=(k[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(x, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def mha_kernel(qkv_ptr, o_ptr, S, H, D, scale, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr):
    E = H * D
    b = tl.program_id(0) // H
    h = tl.program_id(0) % H
    rs = tl.arange(0, BLOCK_S)
    rd = tl.arange(0, BLOCK_D)
    mask = (rs[:, None] < S) & (rd[None, :] < D)
    cols = rd[None, :] * H + h
    rows = qkv_ptr + (b * S + rs[:, None]) * (3 * E) + cols
    q = tl.load(rows, mask=mask, other=0.0)
    k = tl.load(rows + E, mask=mask, other=0.0)
    v = tl.load(rows + 2 * E, mask=mask, other=0.0)
    s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale
    s = tl.where(rs[None, :] < S, s, -float("inf"))
    p = tl.exp(s - tl.max(s, axis=1)[:, None])
    p = p / tl.sum(p, axis=1)[:, None]
    out = tl.dot(p, v, input_precision="ieee")
    tl.store(o_ptr + (b * S + rs[:, None]) * E + cols, out, mask=mask)


def linear(x, layer):
    M, K = x.shape
    N = layer.weight.shape[0]
    y = torch.empty(M, N, device=x.device, dtype=x.dtype)
    linear_kernel[(triton.cdiv(M, 64), triton.cdiv(N, 64))](x, layer.weight, layer.bias, y, M, N, K,
                                                            BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    return y


class ModelNew(nn.Module):
    def __init__(self, embed_dim, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        batch, seq, embed = x.shape
        head_dim = embed // self.n_heads
        qkv = linear(x.contiguous().view(batch * seq, embed), self.qkv)
        attn = torch.empty(batch * seq, embed, device=x.device, dtype=x.dtype)
        mha_kernel[(batch * self.n_heads,)](qkv, attn, seq, self.n_heads, head_dim, 1.0 / math.sqrt(head_dim),
                                            BLOCK_S=max(16, triton.next_power_of_2(seq)),
                                            BLOCK_D=max(16, triton.next_power_of_2(head_dim)))
        return linear(attn, self.proj).view(batch, seq, embed)

"""WRONG on purpose: scales the scores by 1/d instead of 1/sqrt(d), flattening the attention distribution.

Caught by: correctness
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, S, D, scale, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr):
    base = tl.program_id(0) * S * D
    rs = tl.arange(0, BLOCK_S)
    rd = tl.arange(0, BLOCK_D)
    mask = (rs[:, None] < S) & (rd[None, :] < D)
    offs = base + rs[:, None] * D + rd[None, :]
    q = tl.load(q_ptr + offs, mask=mask, other=0.0)
    k = tl.load(k_ptr + offs, mask=mask, other=0.0)
    v = tl.load(v_ptr + offs, mask=mask, other=0.0)
    s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale
    s = tl.where(rs[None, :] < S, s, -float("inf"))
    p = tl.exp(s - tl.max(s, axis=1)[:, None])
    p = p / tl.sum(p, axis=1)[:, None]
    tl.store(o_ptr + offs, tl.dot(p, v, input_precision="ieee"), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        batch, seq, dim = q.shape
        o = torch.empty_like(q)
        attention_kernel[(batch,)](q, k, v, o, seq, dim, 1.0 / dim, BLOCK_S=max(16, triton.next_power_of_2(seq)),
                                   BLOCK_D=max(16, triton.next_power_of_2(dim)))
        return o

"""WRONG on purpose: only the RMSNorm and the gating are Triton kernels; the three projections are handed to F.linear.

Caught by: no_reference_ops
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, y_ptr, n_rows, n_cols, eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    col_ok = cols < n_cols
    mask = (rows[:, None] < n_rows) & col_ok[None, :]
    offs = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    inv_rms = tl.rsqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0)
    tl.store(y_ptr + offs, x * inv_rms[:, None] * w[None, :], mask=mask)


@triton.jit
def silu_mul_kernel(g_ptr, u_ptr, h_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(g_ptr + offs, mask=mask)
    u = tl.load(u_ptr + offs, mask=mask)
    tl.store(h_ptr + offs, g / (1.0 + tl.exp(-g)) * u, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.norm_weight = nn.Parameter(torch.ones(dim))
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        x = x.contiguous()
        dim = x.shape[-1]
        rows = x.numel() // dim
        normed = torch.empty_like(x)
        block_n = triton.next_power_of_2(dim)
        rms_norm_kernel[(triton.cdiv(rows, 16),)](x, self.norm_weight, normed, rows, dim, 1e-6,
                                                  BLOCK_M=16, BLOCK_N=block_n)
        g = F.linear(normed, self.gate.weight).contiguous()
        u = F.linear(normed, self.up.weight).contiguous()
        h = torch.empty_like(g)
        silu_mul_kernel[(triton.cdiv(h.numel(), 4096),)](g, u, h, h.numel(), BLOCK=4096)
        return x + F.linear(h, self.down.weight)

"""WRONG on purpose: takes the mean of x^2 over the padded block width (BLOCK_N) instead of the row length.

Caught by: correctness
"""
import torch
import torch.nn as nn
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
    inv_rms = tl.rsqrt(tl.sum(x * x, axis=1) / BLOCK_N + eps)
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0)
    tl.store(y_ptr + offs, x * inv_rms[:, None] * w[None, :], mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.RMSNorm(dim, eps=1e-6)

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        block_n = triton.next_power_of_2(n_cols)
        block_m = max(1, 8192 // block_n)
        rms_norm_kernel[(triton.cdiv(n_rows, block_m),)](x, self.norm.weight, y, n_rows, n_cols, 1e-6,
                                                          BLOCK_M=block_m, BLOCK_N=block_n)
        return y

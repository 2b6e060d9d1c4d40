"""WRONG on purpose: an exclusive scan (each output omits its own element); the reference is inclusive.

Caught by: correctness
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cumsum_rows_kernel(x_ptr, y_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.cumsum(x, axis=1) - x, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        block_n = triton.next_power_of_2(n_cols)
        block_m = max(1, 4096 // block_n)
        cumsum_rows_kernel[(triton.cdiv(n_rows, block_m),)](x, y, n_rows, n_cols, BLOCK_M=block_m, BLOCK_N=block_n)
        return y

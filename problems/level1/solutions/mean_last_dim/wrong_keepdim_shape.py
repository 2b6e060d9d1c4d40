"""WRONG on purpose: returns shape (B, T, 1) (keepdim=True semantics); the reference drops the reduced dim.

Caught by: output_format
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mean_rows_kernel(x_ptr, y_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=0.0)
    tl.store(y_ptr + rows, tl.sum(x, axis=1) / n_cols, mask=rows < n_rows)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_cols = x.shape[-1]
        n_rows = x.numel() // n_cols
        y = torch.empty(*x.shape[:-1], 1, device=x.device, dtype=x.dtype)
        block_n = triton.next_power_of_2(n_cols)
        block_m = max(1, 8192 // block_n)
        mean_rows_kernel[(triton.cdiv(n_rows, block_m),)](x, y, n_rows, n_cols, BLOCK_M=block_m, BLOCK_N=block_n)
        return y

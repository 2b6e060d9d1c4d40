"""WRONG on purpose: the row length is baked in as the default 773, so any other width reads misaligned rows.

Caught by: perturbed_sizes
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ROW = 773  # tuned for the default problem size


@triton.jit
def l2_normalize_kernel(x_ptr, y_ptr, n_rows, numel,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, N_COLS: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    offs = rows[:, None] * N_COLS + cols[None, :]
    mask = (rows[:, None] < n_rows) & (cols[None, :] < N_COLS) & (offs < numel)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    norm = tl.maximum(tl.sqrt(tl.sum(x * x, axis=1)), 1e-12)
    tl.store(y_ptr + offs, x / norm[:, None], mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows = x.numel() // x.shape[-1]
        y = torch.zeros_like(x)
        l2_normalize_kernel[(triton.cdiv(n_rows, 8),)](x, y, n_rows, x.numel(), BLOCK_M=8, BLOCK_N=1024, N_COLS=ROW)
        return y

"""Row L2 normalisation, y = x / max(||x||_2, eps), over tiles of whole rows."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def l2_normalize_kernel(x_ptr, y_ptr, n_rows, n_cols, eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # x / y: (n_rows, n_cols) contiguous; BLOCK_N >= n_cols.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    norm = tl.maximum(tl.sqrt(tl.sum(x * x, axis=1)), eps)
    tl.store(y_ptr + offs, x / norm[:, None], mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_cols = x.shape[-1]
        n_rows = x.numel() // n_cols
        y = torch.empty_like(x)
        block_n = triton.next_power_of_2(n_cols)
        block_m = max(1, 8192 // block_n)
        l2_normalize_kernel[(triton.cdiv(n_rows, block_m),)](x, y, n_rows, n_cols, 1e-12,
                                                             BLOCK_M=block_m, BLOCK_N=block_n)
        return y

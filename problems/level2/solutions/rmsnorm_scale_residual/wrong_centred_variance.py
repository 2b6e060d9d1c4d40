"""WRONG on purpose: divides by the standard deviation about the mean (LayerNorm style), not the root mean square.

Caught by: correctness
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_norm_residual_kernel(x_ptr, r_ptr, w_ptr, y_ptr, n_rows, n_cols, eps, scale,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    col_ok = cols < n_cols
    mask = (rows[:, None] < n_rows) & col_ok[None, :]
    offs = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    centred = tl.where(mask, x - (tl.sum(x, axis=1) / n_cols)[:, None], 0.0)
    inv_std = tl.rsqrt(tl.sum(centred * centred, axis=1) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0)
    r = tl.load(r_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, centred * inv_std[:, None] * w[None, :] * scale + r, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim, scale):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.scale = scale

    def forward(self, x, residual):
        x, residual = x.contiguous(), residual.contiguous()
        n_cols = x.shape[-1]
        n_rows = x.numel() // n_cols
        y = torch.empty_like(x)
        block_n = triton.next_power_of_2(n_cols)
        block_m = max(1, 8192 // block_n)
        rms_norm_residual_kernel[(triton.cdiv(n_rows, block_m),)](
            x, residual, self.weight, y, n_rows, n_cols, 1e-6, self.scale, BLOCK_M=block_m, BLOCK_N=block_n)
        return y

"""x * rsqrt(mean(x^2) + eps) * weight * scale + residual, one Triton kernel over whole rows."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_norm_residual_kernel(x_ptr, r_ptr, w_ptr, y_ptr, n_rows, n_cols, eps, scale,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # x / r / y: (n_rows, n_cols) contiguous; w: (n_cols,); BLOCK_N >= n_cols.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    col_ok = cols < n_cols
    mask = (rows[:, None] < n_rows) & col_ok[None, :]
    offs = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    inv_rms = tl.rsqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0)
    r = tl.load(r_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, x * inv_rms[:, None] * w[None, :] * scale + r, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim, scale):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))  # overwritten by the reference's weight
        self.scale = scale
        self.eps = 1e-6

    def forward(self, x, residual):
        x, residual = x.contiguous(), residual.contiguous()
        n_cols = x.shape[-1]
        n_rows = x.numel() // n_cols
        y = torch.empty_like(x)
        block_n = triton.next_power_of_2(n_cols)
        block_m = max(1, 8192 // block_n)
        rms_norm_residual_kernel[(triton.cdiv(n_rows, block_m),)](
            x, residual, self.weight, y, n_rows, n_cols, self.eps, self.scale, BLOCK_M=block_m, BLOCK_N=block_n)
        return y

"""RMSNorm over the last dimension, y = x * rsqrt(mean(x^2) + eps) * weight, one Triton kernel."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, y_ptr, n_rows, n_cols, eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # x_ptr / y_ptr: (n_rows, n_cols) contiguous; w_ptr: (n_cols,); BLOCK_N >= n_cols.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    col_ok = cols < n_cols
    mask = (rows[:, None] < n_rows) & col_ok[None, :]
    offs = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    # Divide by the true row length: the zero padding must not count.
    inv_rms = tl.rsqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0)
    tl.store(y_ptr + offs, x * inv_rms[:, None] * w[None, :], mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.RMSNorm(dim, eps=1e-6)  # parameter holder only

    def forward(self, x):
        x = x.contiguous()
        n_cols = x.shape[-1]
        n_rows = x.numel() // n_cols
        y = torch.empty_like(x)
        block_n = triton.next_power_of_2(n_cols)
        block_m = max(1, 8192 // block_n)
        rms_norm_kernel[(triton.cdiv(n_rows, block_m),)](x, self.norm.weight, y, n_rows, n_cols, self.norm.eps,
                                                          BLOCK_M=block_m, BLOCK_N=block_n)
        return y

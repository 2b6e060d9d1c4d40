"""LayerNorm(x + r): the residual add and the normalisation (biased variance,
learned affine) fused in one Triton kernel; the inputs are only read."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_layer_norm_kernel(x_ptr, r_ptr, w_ptr, b_ptr, y_ptr, n_rows, n_cols, eps,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # x / r / y: (n_rows, n_cols) contiguous; w / b: (n_cols,); BLOCK_N >= n_cols.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    col_ok = cols < n_cols
    mask = (rows[:, None] < n_rows) & col_ok[None, :]
    offs = rows[:, None] * n_cols + cols[None, :]
    h = tl.load(x_ptr + offs, mask=mask, other=0.0) + tl.load(r_ptr + offs, mask=mask, other=0.0)
    mean = tl.sum(h, axis=1) / n_cols
    centred = tl.where(mask, h - mean[:, None], 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=1) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0)
    b = tl.load(b_ptr + cols, mask=col_ok, other=0.0)
    tl.store(y_ptr + offs, centred * rstd[:, None] * w[None, :] + b[None, :], mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)  # parameter holder; never called

    def forward(self, x, r):
        x, r = x.contiguous(), r.contiguous()
        n_cols = x.shape[-1]
        n_rows = x.numel() // n_cols
        y = torch.empty_like(x)
        block_n = triton.next_power_of_2(n_cols)
        block_m = max(1, 8192 // block_n)
        add_layer_norm_kernel[(triton.cdiv(n_rows, block_m),)](
            x, r, self.norm.weight, self.norm.bias, y, n_rows, n_cols, self.norm.eps, BLOCK_M=block_m, BLOCK_N=block_n)
        return y

"""LayerNorm over the last dimension: per row mean and biased variance in fp32,
then the learned affine, all in one Triton kernel."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_rows, n_cols, eps,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # x_ptr / y_ptr: (n_rows, n_cols) contiguous; w_ptr / b_ptr: (n_cols,) affine; BLOCK_N >= n_cols.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    col_ok = cols < n_cols
    mask = (rows[:, None] < n_rows) & col_ok[None, :]
    offs = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=1) / n_cols
    centred = tl.where(mask, x - mean[:, None], 0.0)
    var = tl.sum(centred * centred, axis=1) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0)
    b = tl.load(b_ptr + cols, mask=col_ok, other=0.0)
    tl.store(y_ptr + offs, centred * rstd[:, None] * w[None, :] + b[None, :], mask=mask)


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    x = x.contiguous()
    n_cols = x.shape[-1]
    n_rows = x.numel() // n_cols
    y = torch.empty_like(x)
    block_n = triton.next_power_of_2(n_cols)
    block_m = max(1, 8192 // block_n)
    layer_norm_kernel[(triton.cdiv(n_rows, block_m),)](x, weight, bias, y, n_rows, n_cols, eps,
                                                        BLOCK_M=block_m, BLOCK_N=block_n)
    return y


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=1e-5)  # holds the parameters; its forward is never called

    def forward(self, x):
        return layer_norm(x, self.norm.weight, self.norm.bias, self.norm.eps)

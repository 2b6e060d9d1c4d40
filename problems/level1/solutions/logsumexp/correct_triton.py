"""Row log-sum-exp, y = m + log(sum(exp(x - m))) with m the row maximum."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def logsumexp_kernel(x_ptr, y_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # x_ptr: (n_rows, n_cols) contiguous; y_ptr: (n_rows,); BLOCK_N >= n_cols.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    # Padding is -inf: it contributes exp(-inf) = 0 to the sum.
    x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=-float("inf"))
    m = tl.max(x, axis=1)
    s = tl.sum(tl.exp(x - m[:, None]), axis=1)
    tl.store(y_ptr + rows, m + tl.log(s), mask=rows < n_rows)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty(n_rows, device=x.device, dtype=x.dtype)
        block_n = triton.next_power_of_2(n_cols)
        block_m = max(1, 8192 // block_n)
        logsumexp_kernel[(triton.cdiv(n_rows, block_m),)](x, y, n_rows, n_cols, BLOCK_M=block_m, BLOCK_N=block_n)
        return y

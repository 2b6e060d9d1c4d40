"""Row sums, y[i] = sum_j x[i, j]: each program owns BLOCK_M rows and walks the
columns in BLOCK_N chunks, accumulating in fp32."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_rows_kernel(x_ptr, y_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # x_ptr: (n_rows, n_cols) contiguous; y_ptr: (n_rows,).
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < n_rows
    acc = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_ok[:, None] & (cols[None, :] < n_cols)
        x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=0.0)
        acc += tl.sum(x, axis=1)
    tl.store(y_ptr + rows, acc, mask=row_ok)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty(n_rows, device=x.device, dtype=x.dtype)
        block_m, block_n = 16, 512
        sum_rows_kernel[(triton.cdiv(n_rows, block_m),)](x, y, n_rows, n_cols, BLOCK_M=block_m, BLOCK_N=block_n)
        return y

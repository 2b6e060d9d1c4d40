"""WRONG on purpose: multiplies by the temperature instead of dividing, i.e. softmax(x * T).

Caught by: correctness
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scaled_softmax_kernel(x_ptr, y_ptr, n_rows, n_cols, temperature,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None] * n_cols + cols[None, :]
    s = tl.load(x_ptr + offs, mask=mask, other=-float("inf")) * temperature
    e = tl.exp(s - tl.max(s, axis=1)[:, None])
    tl.store(y_ptr + offs, e / tl.sum(e, axis=1)[:, None], mask=mask)


class ModelNew(nn.Module):
    def __init__(self, temperature):
        super().__init__()
        self.temperature = temperature

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        block_n = triton.next_power_of_2(n_cols)
        block_m = max(1, 8192 // block_n)
        scaled_softmax_kernel[(triton.cdiv(n_rows, block_m),)](x, y, n_rows, n_cols, self.temperature,
                                                               BLOCK_M=block_m, BLOCK_N=block_n)
        return y

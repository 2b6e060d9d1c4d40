"""WRONG on purpose: splits the last dimension interleaved (a = even columns, b = odd) instead of into two halves.

Caught by: correctness
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def geglu_kernel(x_ptr, y_ptr, n_rows, half, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < half)
    src = x_ptr + rows[:, None] * (2 * half) + 2 * cols[None, :]
    a = tl.load(src, mask=mask, other=0.0)
    b = tl.load(src + 1, mask=mask, other=0.0)
    gelu_a = 0.5 * a * (1.0 + tl.erf(a * 0.7071067811865476))
    tl.store(y_ptr + rows[:, None] * half + cols[None, :], gelu_a * b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        half = x.shape[-1] // 2
        n_rows = x.numel() // x.shape[-1]
        y = torch.empty(*x.shape[:-1], half, device=x.device, dtype=x.dtype)
        block_n = triton.next_power_of_2(half)
        block_m = max(1, 4096 // block_n)
        grid = (triton.cdiv(n_rows, block_m), triton.cdiv(half, block_n))
        geglu_kernel[grid](x, y, n_rows, half, BLOCK_M=block_m, BLOCK_N=block_n)
        return y

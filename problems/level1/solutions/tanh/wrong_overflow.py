"""WRONG on purpose: (exp(2x) - 1) / (exp(2x) + 1) is inf / inf = NaN once 2x > 88.

Caught by: finite
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tanh_naive_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    e = tl.exp(2.0 * x)
    tl.store(y_ptr + offs, (e - 1.0) / (e + 1.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        tanh_naive_kernel[(triton.cdiv(n, 4096),)](x, y, n, BLOCK=4096)
        return y

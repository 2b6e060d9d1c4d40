"""WRONG on purpose: drops alpha (uses 1.0), so every negative output is off by a factor of 1.3.

Caught by: correctness
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def elu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(x > 0, x, tl.exp(tl.minimum(x, 0.0)) - 1.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        elu_kernel[(triton.cdiv(n, 4096),)](x, y, n, BLOCK=4096)
        return y

"""WRONG on purpose: ignores the constructor's bounds and clamps to hardtanh's defaults [-1, 1].

Caught by: correctness
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def hardtanh_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.minimum(tl.maximum(x, -1.0), 1.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, min_val, max_val):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        hardtanh_kernel[(triton.cdiv(n, 4096),)](x, y, n, BLOCK=4096)
        return y

"""WRONG on purpose: writes the result into the input tensor and returns it (forward must not modify inputs).

Caught by: inputs_unchanged
"""
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def silu_inplace_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(x_ptr + offs, x / (1.0 + tl.exp(-x)), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n = x.numel()
        silu_inplace_kernel[(triton.cdiv(n, 4096),)](x, n, BLOCK=4096)
        return x

"""Softplus with torch's threshold: y = x if x > 20 else log(1 + exp(x))."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softplus_kernel(x_ptr, y_ptr, n, threshold, BLOCK: tl.constexpr):
    # Above the threshold softplus(x) == x in fp32; exp there would overflow past x = 88.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    small = tl.minimum(x, threshold)
    soft = tl.log(1.0 + tl.exp(small))
    tl.store(y_ptr + offs, tl.where(x > threshold, x, soft), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        block = 4096
        softplus_kernel[(triton.cdiv(n, block),)](x, y, n, 20.0, BLOCK=block)
        return y

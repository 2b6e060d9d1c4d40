"""WRONG on purpose: computes in fp16, whose ~1e-3 rounding error exceeds the fp32 tolerance.

Caught by: correctness
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sigmoid_fp16_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float16)
    y = 1.0 / (1.0 + tl.exp((-x).to(tl.float32)).to(tl.float16))
    tl.store(y_ptr + offs, y.to(tl.float32), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        sigmoid_fp16_kernel[(triton.cdiv(n, 4096),)](x, y, n, BLOCK=4096)
        return y

"""WRONG on purpose: clamps x before the affine, computing (clamp(x, -1, 1) * alpha + beta) * x.

Caught by: correctness
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def affine_clamp_mul_kernel(x_ptr, y_ptr, n, alpha, beta, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    gate = tl.minimum(tl.maximum(x, -1.0), 1.0) * alpha + beta
    tl.store(y_ptr + offs, gate * x, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, alpha, beta):
        super().__init__()
        self.alpha = alpha
        self.beta = beta

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        affine_clamp_mul_kernel[(triton.cdiv(n, 4096),)](x, y, n, self.alpha, self.beta, BLOCK=4096)
        return y

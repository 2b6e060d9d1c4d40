"""WRONG on purpose: the grid covers a fixed 19 x 1531 elements, so other sizes are half-computed."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_scale_kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = 19 * 1531  # hard-coded default size
        relu_scale_kernel[(triton.cdiv(n, 512),)](x, y, n, self.scale, BLOCK=512)
        return y

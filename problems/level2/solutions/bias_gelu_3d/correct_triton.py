"""gelu(x + bias) for x (B, T, C) and bias (C,): a flat Triton kernel where each
element finds its bias by its column, offset % C."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_gelu_kernel(x_ptr, bias_ptr, y_ptr, n, n_cols, BLOCK: tl.constexpr):
    # x / y: n contiguous elements, rows of n_cols; bias: (n_cols,).
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask) + tl.load(bias_ptr + offs % n_cols, mask=mask)
    tl.store(y_ptr + offs, 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476)), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(dim))  # overwritten by the reference's bias

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        block = 4096
        bias_gelu_kernel[(triton.cdiv(n, block),)](x, self.bias, y, n, x.shape[-1], BLOCK=block)
        return y

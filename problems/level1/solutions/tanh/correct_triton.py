"""tanh(x) = 1 - 2 / (exp(2x) + 1), a form that saturates to +-1 instead of overflowing."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tanh_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # exp(2x) -> inf gives 1 - 0 = 1 and exp(2x) -> 0 gives 1 - 2 = -1: no inf / inf.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, 1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        block = 4096
        tanh_kernel[(triton.cdiv(n, block),)](x, y, n, BLOCK=block)
        return y

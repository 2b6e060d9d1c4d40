"""ELU, y = x > 0 ? x : alpha * (exp(x) - 1), with alpha from the constructor."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def elu_kernel(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    # exp is taken of min(x, 0) so the unused branch never overflows.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    neg = alpha * (tl.exp(tl.minimum(x, 0.0)) - 1.0)
    tl.store(y_ptr + offs, tl.where(x > 0, x, neg), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        block = 4096
        elu_kernel[(triton.cdiv(n, block),)](x, y, n, self.alpha, BLOCK=block)
        return y

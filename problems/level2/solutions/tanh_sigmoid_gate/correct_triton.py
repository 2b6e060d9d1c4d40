"""tanh(a) * sigmoid(b) + c in one flat Triton kernel (one read of each input, one write)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gate_kernel(a_ptr, b_ptr, c_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # a, b, c, y: n contiguous elements each.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    c = tl.load(c_ptr + offs, mask=mask)
    tanh_a = 1.0 - 2.0 / (tl.exp(2.0 * a) + 1.0)  # saturates to +-1, never inf / inf
    tl.store(y_ptr + offs, tanh_a * tl.sigmoid(b) + c, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c):
        a, b, c = a.contiguous(), b.contiguous(), c.contiguous()
        y = torch.empty_like(a)
        n = a.numel()
        block = 4096
        gate_kernel[(triton.cdiv(n, block),)](a, b, c, y, n, BLOCK=block)
        return y

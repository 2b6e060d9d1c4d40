"""WRONG on purpose: the running maximum starts at 0 and padding loads as 0, so all-negative columns report 0.

Caught by: correctness
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def max_dim1_kernel(x_ptr, y_ptr, n_reduce, n_chan, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    b = tl.program_id(0)
    chans = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    chan_ok = chans < n_chan
    base = x_ptr + b * n_reduce * n_chan
    best = tl.zeros((BLOCK_C,), dtype=tl.float32)
    for start in range(0, n_reduce, BLOCK_R):
        r = start + tl.arange(0, BLOCK_R)
        mask = (r[:, None] < n_reduce) & chan_ok[None, :]
        x = tl.load(base + r[:, None] * n_chan + chans[None, :], mask=mask, other=0.0)
        best = tl.maximum(best, tl.max(x, axis=0))
    tl.store(y_ptr + b * n_chan + chans, best, mask=chan_ok)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        batch, n_reduce, n_chan = x.shape
        y = torch.empty(batch, n_chan, device=x.device, dtype=x.dtype)
        max_dim1_kernel[(batch, triton.cdiv(n_chan, 256))](x, y, n_reduce, n_chan, BLOCK_R=64, BLOCK_C=256)
        return y

"""WRONG on purpose: reads the weight as (C_out, KSIZE, C_in) instead of PyTorch's (C_out, C_in, KSIZE) layout.

Caught by: correctness
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv1d_relu_kernel(x_ptr, w_ptr, bias_ptr, y_ptr, C_in, C_out, L,
                       KSIZE: tl.constexpr, PAD: tl.constexpr,
                       BLOCK_O: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_L: tl.constexpr):
    b = tl.program_id(0)
    pos = tl.program_id(1) * BLOCK_L + tl.arange(0, BLOCK_L)
    outs = tl.arange(0, BLOCK_O)
    chans = tl.arange(0, BLOCK_C)
    out_ok = outs < C_out
    chan_ok = chans < C_in
    acc = tl.zeros((BLOCK_O, BLOCK_L), dtype=tl.float32)
    for t in tl.static_range(KSIZE):
        src = pos + (t - PAD)
        x = tl.load(x_ptr + (b * C_in + chans[:, None]) * L + src[None, :],
                    mask=chan_ok[:, None] & (src[None, :] >= 0) & (src[None, :] < L), other=0.0)
        w = tl.load(w_ptr + (outs[:, None] * KSIZE + t) * C_in + chans[None, :],
                    mask=out_ok[:, None] & chan_ok[None, :], other=0.0)
        acc += tl.dot(w, x, input_precision="ieee")
    acc += tl.load(bias_ptr + outs, mask=out_ok, other=0.0)[:, None]
    dst = y_ptr + (b * C_out + outs[:, None]) * L + pos[None, :]
    tl.store(dst, tl.maximum(acc, 0.0), mask=out_ok[:, None] & (pos[None, :] < L))


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size=5, padding=2)

    def forward(self, x):
        x = x.contiguous()
        batch, c_in, length = x.shape
        weight = self.conv.weight.contiguous()
        c_out = weight.shape[0]
        y = torch.empty(batch, c_out, length, device=x.device, dtype=x.dtype)
        conv1d_relu_kernel[(batch, triton.cdiv(length, 128))](
            x, weight, self.conv.bias, y, c_in, c_out, length, KSIZE=5, PAD=2,
            BLOCK_O=max(16, triton.next_power_of_2(c_out)), BLOCK_C=max(16, triton.next_power_of_2(c_in)),
            BLOCK_L=128)
        return y

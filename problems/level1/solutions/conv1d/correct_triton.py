"""1-D convolution (kernel 3, padding 1, bias) as one small matmul per tap:
y[:, l] = bias + sum_t W[:, :, t] @ x[:, l + t - 1]. Each program computes every
output channel for BLOCK_L positions of one batch element; out-of-range positions
read as zero (the padding)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv1d_kernel(x_ptr, w_ptr, bias_ptr, y_ptr, C_in, C_out, L,
                  KSIZE: tl.constexpr, PAD: tl.constexpr,
                  BLOCK_O: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_L: tl.constexpr):
    # x: (B, C_in, L); w: (C_out, C_in, KSIZE); bias: (C_out,); y: (B, C_out, L).
    # grid = (B, L tiles); BLOCK_O >= C_out and BLOCK_C >= C_in.
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
        w = tl.load(w_ptr + (outs[:, None] * C_in + chans[None, :]) * KSIZE + t,
                    mask=out_ok[:, None] & chan_ok[None, :], other=0.0)
        acc += tl.dot(w, x, input_precision="ieee")
    acc += tl.load(bias_ptr + outs, mask=out_ok, other=0.0)[:, None]
    dst = y_ptr + (b * C_out + outs[:, None]) * L + pos[None, :]
    tl.store(dst, acc, mask=out_ok[:, None] & (pos[None, :] < L))


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size=3, padding=1)  # parameter holder

    def forward(self, x):
        x = x.contiguous()
        batch, c_in, length = x.shape
        weight = self.conv.weight.contiguous()
        c_out, _, ksize = weight.shape
        y = torch.empty(batch, c_out, length, device=x.device, dtype=x.dtype)
        block_l = 128
        conv1d_kernel[(batch, triton.cdiv(length, block_l))](
            x, weight, self.conv.bias, y, c_in, c_out, length, KSIZE=ksize, PAD=1,
            BLOCK_O=max(16, triton.next_power_of_2(c_out)), BLOCK_C=max(16, triton.next_power_of_2(c_in)),
            BLOCK_L=block_l)
        return y

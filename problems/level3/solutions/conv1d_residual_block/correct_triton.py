"""x + conv2(relu(conv1(x))) for two kernel-3 / padding-1 convolutions, as two
launches of one direct-convolution kernel (one small matmul per tap) with ReLU
or the residual add fused into its epilogue."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv1d_kernel(x_ptr, w_ptr, bias_ptr, r_ptr, y_ptr, C_in, C_out, L,
                  KSIZE: tl.constexpr, PAD: tl.constexpr, RELU: tl.constexpr, RESIDUAL: tl.constexpr,
                  BLOCK_O: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_L: tl.constexpr):
    # x: (B, C_in, L); w: (C_out, C_in, KSIZE); bias: (C_out,); r / y: (B, C_out, L).
    # grid = (B, L tiles); BLOCK_O >= C_out, BLOCK_C >= C_in.
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
    out_offs = (b * C_out + outs[:, None]) * L + pos[None, :]
    out_mask = out_ok[:, None] & (pos[None, :] < L)
    if RELU:
        acc = tl.maximum(acc, 0.0)
    if RESIDUAL:
        acc += tl.load(r_ptr + out_offs, mask=out_mask, other=0.0)
    tl.store(y_ptr + out_offs, acc, mask=out_mask)


def conv1d(x: torch.Tensor, conv: nn.Conv1d, relu: bool, residual: torch.Tensor | None) -> torch.Tensor:
    batch, c_in, length = x.shape
    weight = conv.weight.contiguous()
    c_out, _, ksize = weight.shape
    y = torch.empty(batch, c_out, length, device=x.device, dtype=x.dtype)
    r = residual if residual is not None else y  # placeholder pointer when RESIDUAL is off
    conv1d_kernel[(batch, triton.cdiv(length, 128))](
        x, weight, conv.bias, r, y, c_in, c_out, length, KSIZE=ksize, PAD=ksize // 2, RELU=relu,
        RESIDUAL=residual is not None, BLOCK_O=max(16, triton.next_power_of_2(c_out)),
        BLOCK_C=max(16, triton.next_power_of_2(c_in)), BLOCK_L=128)
    return y


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv1d(channels, channels, kernel_size=3, padding=1)  # parameter holders
        self.conv2 = nn.Conv1d(channels, channels, kernel_size=3, padding=1)

    def forward(self, x):
        x = x.contiguous()
        h = conv1d(x, self.conv1, relu=True, residual=None)
        return conv1d(h, self.conv2, relu=False, residual=x)

"""max_pool1d in Triton (offline engine, no LLM): ceil_mode=False.

Launch parameters: BLOCK=256, num_warps=4.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def pool_max_kernel(x_ptr, y_ptr, total, D, H, W, OD, OH, OW, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw,
                    divisor, BLOCK: tl.constexpr):
    """y[p, od, oh, ow] = the maximum (NaN propagating) of the window of x over (planes, D, H, W), both contiguous.

    total: number of outputs; k*, s*, p*, d*: window, stride, padding, dilation per dim
    divisor: average pooling's divisor_override (0: none)
    BLOCK: outputs per program
    """
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    ow = offs % OW
    oh = (offs // OW) % OH
    od = (offs // (OW * OH)) % OD
    plane = offs // (OW * OH * OD)
    d0 = od * sd - pd
    h0 = oh * sh - ph
    w0 = ow * sw - pw
    x_plane = x_ptr + plane * D * H * W
    acc = tl.full((BLOCK,), -float("inf"), tl.float32)
    for a in range(0, kd):
        idd = d0 + a * dd
        for b in range(0, kh):
            ih = h0 + b * dh
            for c in range(0, kw):
                iw = w0 + c * dw
                inside = mask & (idd >= 0) & (idd < D) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                v = tl.load(x_plane + (idd * H + ih) * W + iw, mask=inside, other=-float("inf")).to(tl.float32)
                acc = tl.where((v > acc) | (v != v), v, acc)

    tl.store(y_ptr + offs, acc, mask=mask)


def pool_out_size(n: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    """Output length of a window k, stride s, padding p, dilation d over n (torch's rule)."""
    span = n + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil else 0)) // s + 1
    if ceil and (out - 1) * s >= n + p:  # the last window must start inside the input or left padding
        out -= 1
    return out


def pool(x: torch.Tensor, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple) -> torch.Tensor:
    """max pooling over the last 1 dim(s) of x, computed as 3-D (absent dims: window 1)."""
    nd = 1
    x = x.contiguous()
    lead, spatial = x.shape[:-nd], list(x.shape[-nd:])
    out_sp = [pool_out_size(n, k, s, p, d, False) for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation)]
    out = torch.empty(*lead, *out_sp, dtype=x.dtype, device=x.device)
    if out.numel() == 0:
        return out
    pad3 = lambda t, fill: [fill] * (3 - nd) + list(t)  # noqa: E731
    grid = (triton.cdiv(out.numel(), 256),)
    pool_max_kernel[grid](x, out, out.numel(), *pad3(spatial, 1), *pad3(out_sp, 1), *pad3(kernel, 1),
                          *pad3(stride, 1), *pad3(padding, 0), *pad3(dilation, 1), 0,
                          BLOCK=256, num_warps=4)
    return out


class ModelNew(nn.Module):
    """Same constructor and forward signature as the reference's Model."""

    def __init__(self, kernel_size, stride, padding, dilation) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation

    def forward(self, x) -> torch.Tensor:
        return pool(x, (self.kernel_size,), (self.stride,), (self.padding,), (self.dilation,))

"""WRONG on purpose: the window is read without its dilation (consecutive inputs instead of every
third), so most maxima come from the wrong inputs -- and the output is longer than torch's.

Caught by: correctness
"""

import torch
import torch.nn as nn
from kforge_native import load_c

SRC = r'''
#pragma GCC optimize ("no-trapping-math", "no-math-errno")

#include <stdint.h>
#include <math.h>

/* the maximum (NaN propagating) over a contiguous (planes, D, H, W) input into (planes, OD, OH, OW).
   k*, s*, p*, d*: window, stride, padding, dilation per dim (1, 1, 0, 1 for absent dims). */
void pool_max(const float* x, float* y, int64_t planes, int64_t D, int64_t H, int64_t W,
              int64_t OD, int64_t OH, int64_t OW, int64_t kd, int64_t kh, int64_t kw, int64_t sd, int64_t sh,
              int64_t sw, int64_t pd, int64_t ph, int64_t pw, int64_t dd, int64_t dh, int64_t dw) {
    const int64_t work = planes * OD * OH * OW * kd * kh * kw;
    #pragma omp parallel for collapse(3) schedule(static) if(work > 32768)
    for (int64_t p = 0; p < planes; p++)
    for (int64_t od = 0; od < OD; od++)
    for (int64_t oh = 0; oh < OH; oh++) {
        const float* xp = x + p * D * H * W;
        float* yr = y + ((p * OD + od) * OH + oh) * OW;
        const int64_t d0 = od * sd - pd, h0 = oh * sh - ph;
        #pragma omp simd
        for (int64_t ow = 0; ow < OW; ow++) yr[ow] = -INFINITY;
        for (int64_t a = 0; a < kd; a++) {
            const int64_t id = d0 + a * dd;
            if (id < 0 || id >= D) continue;
            for (int64_t b = 0; b < kh; b++) {
                const int64_t ih = h0 + b * dh;
                if (ih < 0 || ih >= H) continue;
                const float* xr = xp + (id * H + ih) * W;
                for (int64_t c = 0; c < kw; c++) {
                    /* ow with 0 <= ow * sw - pw + c * dw < W */
                    const int64_t off = c * dw - pw;
                    int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
                    int64_t hi = W - off <= 0 ? 0 : (W - off + sw - 1) / sw;
                    if (hi > OW) hi = OW;
                    #pragma omp simd
                    for (int64_t ow = lo; ow < hi; ow++) { const float v = xr[ow * sw + off]; yr[ow] = (v > yr[ow] || v != v) ? v : yr[ow]; }
                }
            }
        }

    }
}
'''
lib = load_c(SRC, [
    "void pool_max(const float* x, float* y, int64_t planes, int64_t D, int64_t H, int64_t W, int64_t OD, int64_t OH, int64_t OW, int64_t kd, int64_t kh, int64_t kw, int64_t sd, int64_t sh, int64_t sw, int64_t pd, int64_t ph, int64_t pw, int64_t dd, int64_t dh, int64_t dw)",
], name="pool_max")

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
    D, H, W = pad3(spatial, 1)
    OD, OH, OW = pad3(out_sp, 1)
    planes = x.numel() // (D * H * W)
    lib.pool_max(x, out, planes, D, H, W, OD, OH, OW, *pad3(kernel, 1), *pad3(stride, 1), *pad3(padding, 0),
                    *pad3(dilation, 1))
    return out

class ModelNew(nn.Module):
    """Same constructor, parameters and forward signature as the reference's Model."""

    def __init__(self, kernel_size, stride, padding, dilation) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation

    def forward(self, x) -> torch.Tensor:
        return pool(x, (self.kernel_size,), (self.stride,), (self.padding,), (1,))  # the dilation dropped: the mistake

"""Max and average pooling, 1-3D, in Triton: any kernel size, stride, padding,
dilation, ceil mode, count_include_pad and divisor_override, read at run time.

Every pooling is computed as 3-D over (planes, D, H, W); a 1-D or 2-D one has
size-1 leading spatial dims and a window of 1 there. Each program owns BLOCK
consecutive outputs (flattened), walks the window, and loads with a mask for the
padding. Max propagates NaN as torch does; average divides as torch does.
"""

from __future__ import annotations

from typing import Any

from ..common import model_class, module_source
from ..settings import POOL_OUT_SIZE, pool_settings
from ..spaces import param_space

PARAM_SPACE: list[dict[str, Any]] = param_space("triton", "pooling")

KERNEL = '''@triton.jit
def pool_{mode}_kernel(x_ptr, y_ptr, total, D, H, W, OD, OH, OW, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw,
                    divisor, BLOCK: tl.constexpr):
    """y[p, od, oh, ow] = {what} of the window of x over (planes, D, H, W), both contiguous.

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
    acc = tl.full((BLOCK,), {init}, tl.float32)
    for a in range(0, kd):
        idd = d0 + a * dd
        for b in range(0, kh):
            ih = h0 + b * dh
            for c in range(0, kw):
                iw = w0 + c * dw
                inside = mask & (idd >= 0) & (idd < D) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                v = tl.load(x_plane + (idd * H + ih) * W + iw, mask=inside, other={init}).to(tl.float32)
                {combine}
{finish}
    tl.store(y_ptr + offs, acc, mask=mask)
'''

# torch's divisor: the window clipped to the padded input (count_include_pad) or to the input
AVG_FINISH = '''    d1 = tl.minimum(d0 + kd, D + pd)
    h1 = tl.minimum(h0 + kh, H + ph)
    w1 = tl.minimum(w0 + kw, W + pw)
    padded = (d1 - d0) * (h1 - h0) * (w1 - w0)
    clipped = (tl.minimum(d1, D) - tl.maximum(d0, 0)) * (tl.minimum(h1, H) - tl.maximum(h0, 0)) * \\
        (tl.minimum(w1, W) - tl.maximum(w0, 0))
    acc = acc / {div}'''

HOST = '''def pool(x: torch.Tensor, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple) -> torch.Tensor:
    """{mode} pooling over the last {nd} dim(s) of x, computed as 3-D (absent dims: window 1)."""
    nd = {nd}
    x = x.contiguous()
    lead, spatial = x.shape[:-nd], list(x.shape[-nd:])
    out_sp = [pool_out_size(n, k, s, p, d, {ceil}) for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation)]
    out = torch.empty(*lead, *out_sp, dtype=x.dtype, device=x.device)
    if out.numel() == 0:
        return out
    pad3 = lambda t, fill: [fill] * (3 - nd) + list(t)  # noqa: E731
    grid = (triton.cdiv(out.numel(), {block}),)
    pool_{mode}_kernel[grid](x, out, out.numel(), *pad3(spatial, 1), *pad3(out_sp, 1), *pad3(kernel, 1),
                          *pad3(stride, 1), *pad3(padding, 0), *pad3(dilation, 1), {divisor},
                          BLOCK={block}, num_warps={warps})
    return out
'''


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    mode, nd = spec["mode"], spec["nd"]
    avg = mode == "avg"
    if avg:
        div = "divisor" if spec["divisor"] else "padded" if spec["count_include_pad"] else "clipped"
        finish = AVG_FINISH.format(div=div)
    else:
        finish = ""
    kernel = KERNEL.format(mode=mode, what="the average" if avg else "the maximum (NaN propagating)",
                           init="0.0" if avg else '-float("inf")',
                           combine="acc += v" if avg else "acc = tl.where((v > acc) | (v != v), v, acc)",
                           finish=finish)
    host = HOST.format(mode=mode, nd=nd, ceil=spec["ceil_mode"], block=params["BLOCK"], warps=params["num_warps"],
                       divisor=int(spec["divisor"] or 0))
    arg = ctx.forward_arg(spec["x"].index)
    cls = model_class(ctx, [f"return pool({arg}, {', '.join(pool_settings(ctx, spec))})"],
                      "Same constructor and forward signature as the reference's Model.")
    doc = (f"{match.kind} in Triton (offline engine, no LLM): ceil_mode={spec['ceil_mode']}"
           + (f", count_include_pad={spec['count_include_pad']}, divisor_override={spec['divisor']}" if avg else "")
           + f".\n\nLaunch parameters: BLOCK={params['BLOCK']}, num_warps={params['num_warps']}.\n")
    return module_source(doc, [kernel, POOL_OUT_SIZE, host, cls])

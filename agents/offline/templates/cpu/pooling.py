"""Max and average pooling, 1-3D, in C: any kernel size, stride, padding, dilation,
ceil mode, count_include_pad and divisor_override, read at run time.

Every pooling is computed as 3-D over (planes, D, H, W) -- a 1-D or 2-D one has
size-1 leading spatial dims and a window of 1 there. Each OpenMP iteration owns
an output row (plane, od, oh). ``order=row`` walks the window outside and the
output row inside: for each valid (a, b, c) of the window, one contiguous,
branch-free vector loop over the output positions whose input lies inside the
row (their range is computed once), combining into the row. ``order=point``
computes each output element on its own (better for windows wider than the
row). Max propagates NaN as torch does; average divides as torch does (padded
or clipped window size, or the override).
"""

from __future__ import annotations

from typing import Any

from ..settings import POOL_OUT_SIZE, pool_settings
from ..spaces import param_space
from .common import module_source, omp_schedule, require_float32, simd_pragma
from .mathlib import prelude

# Its output is a tensor it allocates (a pipeline may let a later stage write over it).
FRESH_OUTPUT = True

PARAM_SPACE: list[dict[str, Any]] = param_space("cpu", "pooling")

HEAD = '''/* {what} over a contiguous (planes, D, H, W) input into (planes, OD, OH, OW).
   k*, s*, p*, d*: window, stride, padding, dilation per dim (1, 1, 0, 1 for absent dims).{avg_doc} */
void pool_{mode}(const float* x, float* y, int64_t planes, int64_t D, int64_t H, int64_t W,
              int64_t OD, int64_t OH, int64_t OW, int64_t kd, int64_t kh, int64_t kw, int64_t sd, int64_t sh,
              int64_t sw, int64_t pd, int64_t ph, int64_t pw, int64_t dd, int64_t dh, int64_t dw{avg_args}) {{
    const int64_t work = planes * OD * OH * OW * kd * kh * kw;
    #pragma omp parallel for collapse(3) {schedule} if(work > {par_min})
    for (int64_t p = 0; p < planes; p++)
    for (int64_t od = 0; od < OD; od++)
    for (int64_t oh = 0; oh < OH; oh++) {{
        const float* xp = x + p * D * H * W;
        float* yr = y + ((p * OD + od) * OH + oh) * OW;
        const int64_t d0 = od * sd - pd, h0 = oh * sh - ph;
{body}
    }}
}}'''

# order=row: window outside, the output row inside (contiguous in ow, stride sw in x)
ROW = '''        {simd}
        for (int64_t ow = 0; ow < OW; ow++) yr[ow] = {init};
        for (int64_t a = 0; a < kd; a++) {{
            const int64_t id = d0 + a * dd;
            if (id < 0 || id >= D) continue;
            for (int64_t b = 0; b < kh; b++) {{
                const int64_t ih = h0 + b * dh;
                if (ih < 0 || ih >= H) continue;
                const float* xr = xp + (id * H + ih) * W;
                for (int64_t c = 0; c < kw; c++) {{
                    /* ow with 0 <= ow * sw - pw + c * dw < W */
                    const int64_t off = c * dw - pw;
                    int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
                    int64_t hi = W - off <= 0 ? 0 : (W - off + sw - 1) / sw;
                    if (hi > OW) hi = OW;
                    {simd}
                    for (int64_t ow = lo; ow < hi; ow++) {{ const float v = xr[ow * sw + off]; {combine} }}
                }}
            }}
        }}
{finish_row}'''

POINT = '''        for (int64_t ow = 0; ow < OW; ow++) {{
            const int64_t w0 = ow * sw - pw;
            float m = {init};
            for (int64_t a = 0; a < kd; a++) {{
                const int64_t id = d0 + a * dd;
                if (id < 0 || id >= D) continue;
                for (int64_t b = 0; b < kh; b++) {{
                    const int64_t ih = h0 + b * dh;
                    if (ih < 0 || ih >= H) continue;
                    const float* xr = xp + (id * H + ih) * W;
                    for (int64_t c = 0; c < kw; c++) {{
                        const int64_t iw = w0 + c * dw;
                        if (iw < 0 || iw >= W) continue;
                        const float v = xr[iw];
                        {combine_m}
                    }}
                }}
            }}
            {store}
        }}'''

# torch's divisor: the window clipped to the padded input, or to the input itself
DIVISOR = '''static inline float pool_divisor(int64_t s0, int64_t k, int64_t n, int64_t p, int64_t* size) {
    int64_t e = s0 + k < n + p ? s0 + k : n + p;
    const int64_t padded = e - s0;
    const int64_t lo = s0 < 0 ? 0 : s0;
    e = e > n ? n : e;
    *size = e - lo;
    return (float)padded;
}'''

AVG_FINISH = '''        int64_t cd, ch;
        const float pdz = pool_divisor(d0, kd, D, pd, &cd), phz = pool_divisor(h0, kh, H, ph, &ch);
        for (int64_t ow = 0; ow < OW; ow++) {{
            int64_t cw;
            const float pwz = pool_divisor(ow * sw - pw, kw, W, pw, &cw);
            {div}
            yr[ow] /= div;
        }}'''


def _divisor(spec: dict[str, Any]) -> str:
    if spec["divisor"]:
        return "const float div = (float)divisor;"
    if spec["count_include_pad"]:
        return "const float div = pdz * phz * pwz;"
    return "const float div = (float)(cd * ch * cw);"


def kernel(spec: dict[str, Any], params: dict[str, Any]) -> str:
    mode = spec["mode"]
    avg = mode == "avg"
    init = "0.0f" if avg else "-INFINITY"
    if params["order"] == "row":
        combine = "yr[ow] += v;" if avg else "yr[ow] = (v > yr[ow] || v != v) ? v : yr[ow];"
        finish = AVG_FINISH.format(div=_divisor(spec)) if avg else ""
        body = ROW.format(simd=simd_pragma(params), init=init, combine=combine, finish_row=finish)
    else:
        combine_m = "m += v;" if avg else "if (v > m || v != v) m = v;"
        store = "yr[ow] = m;"
        if avg:
            store = ("int64_t cd, ch, cw;\n            const float pdz = pool_divisor(d0, kd, D, pd, &cd), "
                     "phz = pool_divisor(h0, kh, H, ph, &ch), pwz = pool_divisor(w0, kw, W, pw, &cw);\n"
                     f"            {_divisor(spec)}\n            yr[ow] = m / div;")
        body = POINT.format(init=init, combine_m=combine_m, store=store)
    what = "the maximum (NaN propagating)" if not avg else "the average"
    head = HEAD.format(what=what, mode=mode, schedule=omp_schedule(params), par_min=params["par_min"], body=body,
                       avg_doc="\n   divisor: torch's divisor_override (0: none)." if avg else "",
                       avg_args=", int64_t divisor" if avg else "")
    return (DIVISOR + "\n\n" + head) if avg else head


def c_prototype(mode: str) -> str:
    return ("void pool_{m}(const float* x, float* y, int64_t planes, int64_t D, int64_t H, int64_t W, int64_t OD, "
            "int64_t OH, int64_t OW, int64_t kd, int64_t kh, int64_t kw, int64_t sd, int64_t sh, int64_t sw, "
            "int64_t pd, int64_t ph, int64_t pw, int64_t dd, int64_t dh, int64_t dw{a})"
            ).format(m=mode, a=", int64_t divisor" if mode == "avg" else "")


HOST = '''def pool(x: torch.Tensor, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple) -> torch.Tensor:
    """{mode} pooling over the last {nd} dim(s) of x, computed as 3-D (absent dims: window 1)."""
    nd = {nd}
    x = x.contiguous()
    lead, spatial = x.shape[:-nd], list(x.shape[-nd:])
    out_sp = [pool_out_size(n, k, s, p, d, {ceil}) for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation)]
    out = scratch.empty(*lead, *out_sp, dtype=x.dtype, device=x.device)
    if out.numel() == 0:
        return out
    pad3 = lambda t, fill: [fill] * (3 - nd) + list(t)  # noqa: E731
    D, H, W = pad3(spatial, 1)
    OD, OH, OW = pad3(out_sp, 1)
    planes = x.numel() // (D * H * W)
    lib.pool_{mode}(x, out, planes, D, H, W, OD, OH, OW, *pad3(kernel, 1), *pad3(stride, 1), *pad3(padding, 0),
                    *pad3(dilation, 1){divisor})
    return out
'''


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    require_float32(match.ctx.outputs[0].get("dtype"), spec["x"].dtype)
    mode, nd = spec["mode"], spec["nd"]
    host = HOST.format(mode=mode, nd=nd, ceil=spec["ceil_mode"],
                       divisor=f", {int(spec['divisor'] or 0)}" if mode == "avg" else "")
    settings = pool_settings(ctx, spec)
    knobs = ", ".join(f"{k}={v}" for k, v in params.items())
    doc = (f"{match.kind} in C (offline engine, no LLM, backend cpu): ceil_mode={spec['ceil_mode']}"
           + (f", count_include_pad={spec['count_include_pad']}, divisor_override={spec['divisor']}"
              if mode == "avg" else "") + f".\n\nParameters: {knobs}.\n")
    arg = ctx.forward_arg(spec["x"].index)
    c_source = prelude() + "\n\n" + kernel(spec, params)
    return module_source(doc, c_source, [c_prototype(mode)], f"pool_{mode}", [POOL_OUT_SIZE, host], ctx,
                         [f"return pool({arg}, {', '.join(settings)})"])

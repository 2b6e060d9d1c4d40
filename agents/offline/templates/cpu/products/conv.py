"""Convolution and transposed convolution, 1-3D, in C: any stride, padding, dilation,
groups (depthwise included) and output padding, read at run time; the bias and the
matched elementwise epilogue applied to each output before it leaves the cache.

Four algorithms: the implicit GEMM of conv_gemm.py, the direct one below, ``dnnl``
(oneDNN's convolution, conv_dnnl.py), and ``blas``: for a forward convolution, per
sample and group the input's patches are laid out as a (C/groups * taps, positions)
matrix -- a 1x1 convolution reads the input itself -- and OpenBLAS's sgemm multiplies
the weight by it; for a transposed one, sgemm multiplies the transposed weight by the
input into a (K/groups * taps, input positions) matrix whose rows are then added into
the output planes (col2im, one output channel per thread); bias and epilogue in one pass
after; ``algorithm`` picks (``algo=auto``: the GEMM unless a group has too few output
channels to fill the micro-kernel, as depthwise ones). Both compute every convolution as
3-D over (N, C, D, H, W) -- a 1-D or 2-D one has size-1 leading spatial dims and a
window of 1 there.

Direct: one OpenMP iteration owns a block
of KB output channels of one group for one (sample, output depth); for each output row
it walks the window, and for each tap runs one contiguous vector loop over the output
positions whose input lies inside the row (their range computed once per tap), for
each of the KB channels in turn while the input row stays in L1 (register blocking
over output channels). The transposed convolution gathers rows: output row o reads
input row (o + padding - tap * dilation) / stride where that divides; along the row,
each tap's loop runs over the input positions, contiguous, and adds into every
stride-th output (no division in the loop: 4x faster than dividing per element).
"""

from __future__ import annotations

import math
from typing import Any

from ... import conv_host
from ...spaces import param_space
from ..common import INLINE, CEpilogue, c_epilogue, helper_names, module_source, omp_schedule, require_float32, simd_pragma
from ..mathlib import prelude
from . import conv_dnnl, conv_gemm
from .gemm import ISA, MICRO

# Its output is a tensor it allocates (a pipeline may let a later stage write over it).
FRESH_OUTPUT = True

PARAM_SPACE: list[dict[str, Any]] = param_space("cpu", "conv")

DIMS = ("int64_t N, int64_t C, int64_t D, int64_t H, int64_t W, int64_t K, int64_t OD, int64_t OH, int64_t OW, "
        "int64_t kd, int64_t kh, int64_t kw, int64_t sd, int64_t sh, int64_t sw, int64_t pd, int64_t ph, "
        "int64_t pw, int64_t dd, int64_t dh, int64_t dw, int64_t groups")

HEAD = '''/* {what}
   x: (N, C, D, H, W), w: {wshape}, y: (N, K, OD, OH, OW), all contiguous.
   k*, s*, p*, d*: window, stride, padding, dilation per dim (1, 1, 0, 1 for absent dims).{docs} */
void {fn}({args}) {{
    const int64_t cg = C / groups, kg = K / groups;
    const int64_t nb = (kg + {KB} - 1) / {KB};  /* blocks of {KB} output channels per group */
    const int64_t work = N * K * OD * OH * OW * cg * kd * kh * kw;
    #pragma omp parallel for collapse(3) {schedule} if(work > {par_min})
    for (int64_t n = 0; n < N; n++)
    for (int64_t blk = 0; blk < groups * nb; blk++)
    for (int64_t od = 0; od < OD; od++) {{
        const int64_t g = blk / nb, k0 = g * kg + (blk % nb) * {KB};
        const int64_t k1 = k0 + {KB} < (g + 1) * kg ? k0 + {KB} : (g + 1) * kg;
        for (int64_t oh = 0; oh < OH; oh++) {{
            for (int64_t k = k0; k < k1; k++) {{
                float* yr = y + (((n * K + k) * OD + od) * OH + oh) * OW;
                for (int64_t ow = 0; ow < OW; ow++) yr[ow] = 0.0f;
            }}
            for (int64_t c = 0; c < cg; c++)
            for (int64_t a = 0; a < kd; a++) {{
{depth}
                for (int64_t b = 0; b < kh; b++) {{
{height}
                    const float* xr = x + (((n * C + g * cg + c) * D + id) * H + ih) * W;
                    for (int64_t e = 0; e < kw; e++) {{
{width}
                        for (int64_t k = k0; k < k1; k++) {{
                            const float wv = w[{windex}];
                            float* yr = y + (((n * K + k) * OD + od) * OH + oh) * OW;
                            {simd}
                            {inner}
                        }}
                    }}
                }}
            }}
            for (int64_t k = k0; k < k1; k++) {{
                float* yr = y + (((n * K + k) * OD + od) * OH + oh) * OW;
                const int64_t row = ((n * K + k) * OD + od) * OH + oh;
                (void)row;
{finish}
            }}
        }}
    }}
}}'''

# forward: output position o reads input o * s - p + tap * d
FORWARD_TAPS = {
    "depth": "                const int64_t id = od * sd - pd + a * dd;\n                if (id < 0 || id >= D) continue;",
    "height": "                    const int64_t ih = oh * sh - ph + b * dh;\n"
              "                    if (ih < 0 || ih >= H) continue;",
    "width": "                        /* ow with 0 <= ow * sw - pw + e * dw < W */\n"
             "                        const int64_t off = e * dw - pw;\n"
             "                        const int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;\n"
             "                        int64_t hi = W - off <= 0 ? 0 : (W - off + sw - 1) / sw;\n"
             "                        if (hi > OW) hi = OW;",
    "windex": "(((k * cg + c) * kd + a) * kh + b) * kw + e",
    "inner": "for (int64_t ow = lo; ow < hi; ow++) yr[ow] += wv * xr[ow * sw + off];",
}
# transposed: output position o reads input (o + p - tap * d) / s where that divides
TRANSPOSED_TAPS = {
    "depth": "                const int64_t td = od + pd - a * dd;\n"
             "                if (td < 0 || td % sd) continue;\n"
             "                const int64_t id = td / sd;\n                if (id >= D) continue;",
    "height": "                    const int64_t th = oh + ph - b * dh;\n"
              "                    if (th < 0 || th % sh) continue;\n"
              "                    const int64_t ih = th / sh;\n                    if (ih >= H) continue;",
    "width": "                        /* input iw feeds output ow = iw * sw - off: the iw with 0 <= ow < OW, no division\n"
             "                           in the loop (contiguous reads of the input row) */\n"
             "                        const int64_t off = pw - e * dw;\n"
             "                        const int64_t lo = off > 0 ? (off + sw - 1) / sw : 0;\n"
             "                        int64_t hi = OW + off > 0 ? (OW + off + sw - 1) / sw : 0;\n"
             "                        if (hi > W) hi = W;",
    "windex": "((((g * cg + c) * kg + (k - g * kg)) * kd + a) * kh + b) * kw + e",
    "inner": "for (int64_t iw = lo; iw < hi; iw++) yr[iw * sw - off] += wv * xr[iw];",
}

LAUNCH = '''{prep}    lib.{fn}(x, w, {ptrs}y, {operands}N, C, *pad3(x.shape[2:], 1), K, *pad3(out_sp, 1), *pad3(w.shape[2:], 1),
       *pad3(stride, 1), *pad3(padding, 0), *pad3(dilation, 1), groups{scalars})
    return y
'''


# the oneDNN kernel's locals (conv_dnnl.py), which an epilogue operand's name must not take
DNNL_LOCALS = ("in3", "out3", "k3", "s3", "p3", "d3", "sdims", "ddims", "wdims", "bdims", "st", "dl", "pl", "pr",
               "plain", "swapped", "gswapped", "wn", "wtag", "eng", "strm", "us", "uw", "ub", "ud", "cs", "cw", "cd",
               "pick", "cpd", "qs", "qw", "qd", "rs", "rw", "rd", "ms", "mw", "mb", "md", "bs", "bw", "bd", "conv",
               "made", "rc", "ns", "nd", "i", "j", "span", "desc", "args", "lay", "gathered", "handle", "src", "tiles",
               "job", "sr", "sp", "p1", "kf_layout", "per", "cap", "mb", "mb_", "q", "into", "back", "prims", "xs",
               "n0", "a")

# the patches' room (one sample and group at a time); unused by a 1x1 stride-1 convolution
BLAS_COL = ("    col = torch.empty(max(1, (C // groups) * math.prod(w.shape[2:]) * math.prod(out_sp)), "
            "dtype=torch.float32, device=x.device)\n")
# a transposed convolution's columns: (K / groups * taps, input positions)
BLAS_COL_T = ("    col = torch.empty(max(1, w.shape[1] * math.prod(w.shape[2:]) * math.prod(x.shape[2:])), "
              "dtype=torch.float32, device=x.device)\n")


def _direct(spec: dict[str, Any], fn: str, what: str, params: dict[str, Any], ep: CEpilogue, c_args: str) -> str:
    bias = spec["bias"]
    finish = ["                " + simd_pragma({}), "                for (int64_t ow = 0; ow < OW; ow++) {",
              f"                    const float acc = yr[ow]{' + bias[k]' if bias is not None else ''};",
              *(f"                    {line}" for line in ep.statements),
              f"                    yr[ow] = {ep.result};", "                }"]
    taps = TRANSPOSED_TAPS if spec["transposed"] else FORWARD_TAPS
    kernel = HEAD.format(what=what, fn=fn, args=c_args, KB=int(params["KB"]),
                         schedule=omp_schedule(params), par_min=int(params["par_min"]),
                         wshape="(C, K / groups, kd, kh, kw)" if spec["transposed"] else "(K, C / groups, kd, kh, kw)",
                         docs="".join(f"\n   {d}" for d in ep.docs), simd=simd_pragma({}), finish="\n".join(finish),
                         **taps)
    return prelude(helper_names(kernel)) + "\n\n" + INLINE + "\n\n" + kernel


def _gemm(spec: dict[str, Any], fn: str, what: str, params: dict[str, Any], ep: CEpilogue, c_args: str) -> str:
    body = "\n".join(f"                        {line}" for line in ep.statements)
    kernel = conv_gemm.kernel(spec["transposed"], what=what + " Implicit GEMM.", fn=fn, args=c_args,
                              docs="".join(f"\n   {d}" for d in ep.docs), par_min=int(params["par_min"]),
                              schedule=omp_schedule(params), simd=simd_pragma({}), epilogue=body,
                              result=ep.result, bias=" + bias[k]" if spec["bias"] is not None else "")
    return "\n\n".join([prelude(helper_names(kernel)), "#include <stdlib.h>", ISA, INLINE, MICRO, kernel])


BLAS = '''/* {what} The product by OpenBLAS (cblas_sgemm) over laid-out patches.
   x: (N, C, D, H, W), w: (K, C / groups, kd, kh, kw), y: (N, K, OD, OH, OW), all contiguous;
   col: room for one (C / groups * kd * kh * kw, OD * OH * OW) matrix of patches.{docs} */
void {fn}({args}) {{
    const int64_t cg = C / groups, kg = K / groups, T = kd * kh * kw, R = cg * T, P = OD * OH * OW;
    const int direct = T == 1 && sd == 1 && sh == 1 && sw == 1 && pd == 0 && ph == 0 && pw == 0;
    for (int64_t n = 0; n < N; n++)
    for (int64_t g = 0; g < groups; g++) {{
        const float* xg = x + (n * C + g * cg) * D * H * W;
        if (!direct) {{
            #pragma omp parallel for schedule(static) if(R * P >= {par_min})
            for (int64_t r = 0; r < R; r++) {{
                const int64_t c = r / T, t = r % T, a = t / (kh * kw), b = (t / kw) % kh, e = t % kw;
                const float* xc = xg + c * D * H * W;
                const int64_t off = e * dw - pw;
                for (int64_t od = 0; od < OD; od++) {{
                    const int64_t id = od * sd - pd + a * dd;
                    for (int64_t oh = 0; oh < OH; oh++) {{
                        const int64_t ih = oh * sh - ph + b * dh;
                        float* dst = col + r * P + (od * OH + oh) * OW;
                        if (id < 0 || id >= D || ih < 0 || ih >= H) {{
                            for (int64_t ow = 0; ow < OW; ow++) dst[ow] = 0.0f;
                            continue;
                        }}
                        const float* xr = xc + (id * H + ih) * W;
                        for (int64_t ow = 0; ow < OW; ow++) {{
                            const int64_t iw = ow * sw + off;
                            dst[ow] = iw >= 0 && iw < W ? xr[iw] : 0.0f;
                        }}
                    }}
                }}
            }}
        }}
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)kg, (blasint)P, (blasint)R, 1.0f,
                    w + g * kg * R, (blasint)R, direct ? xg : col, (blasint)P, 0.0f, y + (n * K + g * kg) * P,
                    (blasint)P);
    }}
{finish}}}'''

TBLAS = '''/* {what} The product by OpenBLAS (cblas_sgemm), then its columns added into the output.
   x: (N, C, D, H, W), w: (C, K / groups, kd, kh, kw), y: (N, K, OD, OH, OW), all contiguous;
   col: room for one (K / groups * kd * kh * kw, D * H * W) matrix: what each input position
   gives each output channel through each tap (col2im scatters it).{docs} */
void {fn}({args}) {{
    const int64_t cg = C / groups, kg = K / groups, T = kd * kh * kw, Q = D * H * W, P = OD * OH * OW;
    for (int64_t n = 0; n < N; n++)
    for (int64_t g = 0; g < groups; g++) {{
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (blasint)(kg * T), (blasint)Q, (blasint)cg, 1.0f,
                    w + g * cg * kg * T, (blasint)(kg * T), x + (n * C + g * cg) * Q, (blasint)Q, 0.0f, col,
                    (blasint)Q);
        /* one output channel per iteration: no two threads add into the same plane */
        #pragma omp parallel for schedule(static) if(kg * T * Q >= {par_min})
        for (int64_t k = 0; k < kg; k++) {{
            float* yk = y + (n * K + g * kg + k) * P;
            for (int64_t p = 0; p < P; p++) yk[p] = 0.0f;
            for (int64_t t = 0; t < T; t++) {{
                const int64_t a = t / (kh * kw), b = (t / kw) % kh, e = t % kw;
                const float* cr = col + (k * T + t) * Q;
                /* input iw feeds output ow = iw * sw + off */
                const int64_t off = e * dw - pw;
                const int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
                int64_t hi = OW - off <= 0 ? 0 : (OW - off + sw - 1) / sw;
                if (hi > W) hi = W;
                for (int64_t id = 0; id < D; id++) {{
                    const int64_t od = id * sd - pd + a * dd;
                    if (od < 0 || od >= OD) continue;
                    for (int64_t ih = 0; ih < H; ih++) {{
                        const int64_t oh = ih * sh - ph + b * dh;
                        if (oh < 0 || oh >= OH) continue;
                        const float* src = cr + (id * H + ih) * W;
                        float* dst = yk + (od * OH + oh) * OW;
                        {simd}
                        for (int64_t iw = lo; iw < hi; iw++) dst[iw * sw + off] += src[iw];
                    }}
                }}
            }}
        }}
    }}
{finish}}}'''

BLAS_FINISH = '''    #pragma omp parallel for {schedule} if(N * K * P >= {par_min})
    for (int64_t row = 0; row < N * K; row++) {{
        const int64_t k = row % K;
        float* yr = y + row * P;
        {simd}
        for (int64_t p = 0; p < P; p++) {{
            const float acc = yr[p]{bias};
{epilogue}
            yr[p] = {result};
        }}
    }}
'''


def _blas(spec: dict[str, Any], fn: str, what: str, params: dict[str, Any], ep: CEpilogue, c_args: str) -> str:
    bias = " + bias[k]" if spec["bias"] is not None else ""
    finish = "" if not bias and ep.result == "acc" and not ep.statements else BLAS_FINISH.format(
        schedule=omp_schedule(params), par_min=int(params["par_min"]), simd=simd_pragma({}), bias=bias,
        epilogue="\n".join(f"            {line}" for line in ep.statements), result=ep.result)
    kernel = (TBLAS if spec["transposed"] else BLAS).format(
        what=what, fn=fn, args=c_args, docs="".join(f"\n   {d}" for d in ep.docs), par_min=int(params["par_min"]),
        finish=finish, simd=simd_pragma({}))
    return "\n\n".join([prelude(helper_names(kernel)), "#include <cblas.h>", INLINE, kernel])


def _dnnl(spec: dict[str, Any], fn: str, what: str, params: dict[str, Any], ep: CEpilogue, c_args: str) -> str:
    bias = " + bias[k]" if spec["bias"] is not None and not conv_dnnl.bias_in_library(spec) else ""
    finish = "" if not bias and ep.result == "acc" and not ep.statements else \
        BLAS_FINISH.format(
            schedule=omp_schedule(params), par_min=int(params["par_min"]), simd=simd_pragma({}), bias=bias,
            epilogue="\n".join(f"            {line}" for line in ep.statements), result=ep.result)
    gather = conv_dnnl.GATHER.format(schedule=omp_schedule(params), par_min=int(params["par_min"]), bias=bias,
                                     epilogue="\n".join(f"                        {line}" for line in ep.statements),
                                     result=ep.result)
    kernel = conv_dnnl.kernel(spec, fn, what, c_args, "".join(f"\n   {d}" for d in ep.docs),
                              params.get("layout", "any"), finish, gather)
    return "\n\n".join([prelude(helper_names(kernel)), "#include <oneapi/dnnl/dnnl.h>", INLINE, kernel])


def algorithm(spec: dict[str, Any], params: dict[str, Any]) -> str:
    """``direct``, ``gemm``, ``dnnl`` or ``blas`` as asked; ``auto`` takes the implicit GEMM when a group has 4 output channels
    or more and the reduction is long enough (not depthwise)."""
    algo = params.get("algo", "direct")
    if algo != "auto":
        return algo
    w = spec["weight"].shape
    groups = spec["groups"].value
    if w is None or not isinstance(groups, int):
        return "direct"
    taps = math.prod(w[2:])
    kg, cg = (w[1], w[0] // groups) if spec["transposed"] else (w[0] // groups, w[1])
    # measured over KernelBench's level-1 convolutions at fitted sizes (8-14 channels): the GEMM
    # from 4 output channels per group gave a geomean of 0.82x eager, from 12 on only 0.65x
    # (docs/benchmarks/history/2026-11-25.md, issue 18 fourth session)
    return "gemm" if kg >= 4 and cg * taps >= 8 else "direct"


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    transposed, nd = spec["transposed"], spec["nd"]
    x, weight, bias = spec["x"], spec["weight"], spec["bias"]
    require_float32(match.ctx.outputs[0].get("dtype"), x.dtype, weight.dtype, *(e.dtype for e in spec["epilogue"]))
    algo = algorithm(spec, params)
    fn = ("conv_transpose" if transposed else "conv") + {"gemm": "_gemm", "blas": "_blas", "dnnl": "_dnnl"}.get(algo, "_fwd")
    reserved = {"x", "w", "wm", "y", "yr", "xr", "xc", "k", "g", "a", "e", "j", "p", "p0", "pp", "nj", "m0", "mr",
                "ow", "iw", "ih", "id", "oh", "od", "row", "acc", "bias", "wv", "lo", "hi", "off", "blk", "k0", "k1",
                "cg", "kg", "nb", "work", "bp", "tile", "tr", "dst", "zd", "zh", "zw", "T", "R", "P", "panels",
                "a_rows", "okd", "okh", "okw", "qd", "qh", "qw", *DNNL_LOCALS}
    ep = c_epilogue(ctx, spec, spec["conv"], {"scalar": "0", "channel": "k",
                                              "full": "row * P + p" if algo in ("gemm", "blas", "dnnl") else "row * OW + ow"},
                    reserved | {"col", "xg", "direct", "dst", "t", "b", "c", "n", "r"})
    c_args = ", ".join(["const float* x", "const float* wm" if algo == "gemm" and not transposed else "const float* w",
                        *(["const float* bias"] if bias is not None else []),
                        *(["float* col"] if algo == "blas" else []), "float* y", *ep.c_args, DIMS,
                        *(f"float {s}" for s in ep.scalars)])
    what = (f"{'Transposed convolution' if transposed else 'Convolution'} ({nd}-D as 3-D), groups, "
            f"{'bias, ' if bias is not None else ''}epilogue: y = {match.kind}.")
    c_source = {"gemm": _gemm, "blas": _blas, "dnnl": _dnnl}.get(algo, _direct)(spec, fn, what, params, ep, c_args)
    extra = "".join(f", {o.strip(', ')}: torch.Tensor" for o in ep.operands) + \
        "".join(f", {s}: float" for s in ep.scalars)
    host = conv_host.head(spec, "", extra, "x.dtype", "scratch.empty") + \
        (conv_dnnl.HOST_CALL if algo == "dnnl" else LAUNCH).format(
            fn=fn, prep="".join(ep.prep) + ((BLAS_COL_T if transposed else BLAS_COL) if algo == "blas" else ""),
            ptrs=("b, " if bias is not None else "") + ("col, " if algo == "blas" else ""),
            operands="".join(ep.operands), scalars="".join(f", {s}" for s in ep.scalars))
    call = [*conv_host.call_args(ctx, spec), *ep.forward_ops, *ep.scalars.values()]
    knobs = ", ".join(f"{k}={v}" for k, v in params.items())
    how = {"gemm": "implicit GEMM", "blas": "patches multiplied by OpenBLAS",
           "dnnl": f"oneDNN's convolution ({params.get('layout', 'any')} layout)"}.get(algo, "direct")
    doc = f"{match.kind} in C (offline engine, no LLM, backend cpu), {how}.\n\nParameters: {knobs}.\n"
    proto = f"{'int' if algo == 'dnnl' else 'void'} {fn}({c_args})"
    return module_source(doc, c_source, [proto], fn, [host], ctx, [f"return conv({', '.join(call)})"],
                         uses_math=algo == "blas")

"""Layer norm and RMS norm over the trailing dims in C, one row per OpenMP iteration.

The normalised dims are flattened into one contiguous row. Layer norm takes the
mean first and then the centred sum of squares (accurate when the mean is
large), RMS norm the mean square; both accumulate in the parameter set's type
(double by default) and finish with one fused pass: scale, weight, bias.
"""

from __future__ import annotations

from typing import Any

from ...spaces import param_space
from ..common import module_source, omp_schedule, require_float32, simd_pragma
from ..mathlib import prelude

PARAM_SPACE: list[dict[str, Any]] = param_space("cpu", "norm")

_LAYER = '''        {acc} sum = 0;
        {simd_sum}
        for (int64_t c = 0; c < cols; c++) sum += xr[c];
        const float mean = (float)(sum / cols);
        {acc} sq = 0;
        {simd_sq}
        for (int64_t c = 0; c < cols; c++) {{ const float d = xr[c] - mean; sq += d * d; }}
        const float inv = (float)(1.0 / sqrt((double)(sq / cols) + eps));'''
_RMS = '''        const float mean = 0.0f;
        {acc} sq = 0;
        {simd_sq}
        for (int64_t c = 0; c < cols; c++) sq += xr[c] * xr[c];
        const float inv = (float)(1.0 / sqrt((double)(sq / cols) + eps));'''

KERNEL = '''/* Each row of a contiguous (rows, cols) matrix: out = {formula}.
   x, out: input and output rows; w, b: {cols_what} values over the normalised dims;
   eps: added to the {stat} before the square root. */
void {name}_rows({params}) {{
    #pragma omp parallel for {schedule} if(rows * cols >= KF_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {{
        const float* xr = x + r * cols;
        float* yr = out + r * cols;
{stats}
        {simd}
        for (int64_t c = 0; c < cols; c++) yr[c] = {affine};
    }}
}}'''


# A norm over a middle dim (x viewed as (outer, C, inner)): statistics per (outer, inner)
# position over C values `inner` apart, a block of BLOCK positions per OpenMP iteration
# (C x BLOCK floats stay in cache between the statistics and the writing pass: x is read
# from memory once).
STRIDED_BLOCK = 256
_STRIDED_LAYER = '''        for (int64_t c = 0; c < C; c++) {{
            const float* xr = xb + c * inner;
            {simd}
            for (int64_t j = 0; j < n; j++) s1[j] += xr[j];
        }}
        for (int64_t j = 0; j < n; j++) mean[j] = (float)(s1[j] / C);
        for (int64_t c = 0; c < C; c++) {{
            const float* xr = xb + c * inner;
            {simd}
            for (int64_t j = 0; j < n; j++) {{ const float d = xr[j] - mean[j]; s2[j] += d * d; }}
        }}'''
_STRIDED_RMS = '''        for (int64_t c = 0; c < C; c++) {{
            const float* xr = xb + c * inner;
            {simd}
            for (int64_t j = 0; j < n; j++) s2[j] += xr[j] * xr[j];
        }}'''
STRIDED_KERNEL = '''/* x and out viewed as (outer, C, inner): out = {formula} over the C values of each
   (outer, inner) position, which lie `inner` apart. */
void {name}_strided(const float* x, float* out, int64_t outer, int64_t C, int64_t inner, double eps) {{
    const int64_t nblk = (inner + {block} - 1) / {block};
    #pragma omp parallel for {schedule} if(outer * C * inner >= KF_PAR_MIN)
    for (int64_t t = 0; t < outer * nblk; t++) {{
        const int64_t o = t / nblk, i0 = (t % nblk) * {block};
        const int64_t n = inner - i0 < {block} ? inner - i0 : {block};
        const float* xb = x + o * C * inner + i0;
        float* yb = out + o * C * inner + i0;
        {acc} s1[{block}], s2[{block}];
        float mean[{block}], inv[{block}];
        for (int64_t j = 0; j < n; j++) {{ s1[j] = 0; s2[j] = 0; mean[j] = 0.0f; }}
{stats}
        for (int64_t j = 0; j < n; j++) inv[j] = (float)(1.0 / sqrt((double)(s2[j] / C) + eps));
        for (int64_t c = 0; c < C; c++) {{
            const float* xr = xb + c * inner;
            float* yr = yb + c * inner;
            {simd}
            for (int64_t j = 0; j < n; j++) yr[j] = {centred} * inv[j];
        }}
    }}
}}'''


def render_strided(match: Any, params: dict[str, Any]) -> str:
    """The norm over dim ``spec["axis"]`` (not the last; no weight or bias)."""
    ctx = match.ctx.fresh()
    spec = match.spec
    rms, axis = spec["rms"], spec["axis"]
    require_float32(match.ctx.outputs[0].get("dtype"), spec["x"].dtype)
    name = "rms_norm" if rms else "layer_norm"
    formula = "x / sqrt(mean(x^2) + eps)" if rms else "(x - mean(x)) / sqrt(var(x) + eps)"
    simd = simd_pragma(params)
    stats = (_STRIDED_RMS if rms else _STRIDED_LAYER).format(simd=simd)
    kernel = STRIDED_KERNEL.format(formula=formula, name=name, block=STRIDED_BLOCK, schedule=omp_schedule(params),
                                   acc=params["acc"], stats=stats, simd=simd,
                                   centred="xr[j]" if rms else "(xr[j] - mean[j])")
    c_sig = f"void {name}_strided(const float* x, float* out, int64_t outer, int64_t C, int64_t inner, double eps)"
    bound = ctx.scalar(spec["eps"])
    eps_arg, eps_value = (bound[0], bound[1]) if bound else ("eps", ctx.literal(spec["eps"]))
    host = [f"def {name}(x: torch.Tensor, {eps_arg}: float) -> torch.Tensor:",
            f'    """{name} over dim {axis}: x as (outer, C, inner), one block of inner positions per iteration."""',
            "    x = x.contiguous()",
            "    out = torch.empty_like(x)",
            f"    outer, C, inner = math.prod(x.shape[:{axis}]), x.shape[{axis}], math.prod(x.shape[{axis + 1}:])",
            "    if out.numel():",
            f"        lib.{name}_strided(x, out, outer, C, inner, float({eps_arg}))",
            "    return out"]
    knobs = ", ".join(f"{k}={v}" for k, v in params.items())
    doc = (f"{match.kind} over dim {axis} in C (offline engine, no LLM, backend cpu).\n\n"
           f"out = {formula}\nParameters: {knobs}, BLOCK={STRIDED_BLOCK}.\n")
    args = [ctx.forward_arg(spec["x"].index), eps_value]
    return module_source(doc, prelude() + "\n\n" + kernel, [c_sig], name, ["\n".join(host)], ctx,
                         [f"return {name}({', '.join(args)})"], uses_math=True)


def render(match: Any, params: dict[str, Any]) -> str:
    if match.spec.get("axis") is not None:
        return render_strided(match, params)
    ctx = match.ctx.fresh()
    spec = match.spec
    rms, ndims = spec["rms"], spec["ndims"]
    weight, bias = spec["weight"], spec["bias"]
    require_float32(match.ctx.outputs[0].get("dtype"), spec["x"].dtype, *(p.dtype for p in (weight, bias) if p))
    name = "rms_norm" if rms else "layer_norm"
    formula = ("x / sqrt(mean(x^2) + eps)" if rms else "(x - mean(x)) / sqrt(var(x) + eps)") + \
        (" * weight" if weight else "") + (" + bias" if bias else "")
    affine = "xr[c] * inv" if rms else "(xr[c] - mean) * inv"
    if weight:
        affine += " * w[c]"
    if bias:
        affine += " + b[c]"
    c_params = ["const float* x", *(["const float* w"] if weight else []), *(["const float* b"] if bias else []),
                "float* out", "int64_t rows", "int64_t cols", "double eps"]
    acc = params["acc"]
    stats = (_RMS if rms else _LAYER).format(acc=acc, simd_sum=simd_pragma(params, "reduction(+:sum)"),
                                             simd_sq=simd_pragma(params, "reduction(+:sq)"))
    kernel = KERNEL.format(formula=formula, cols_what="cols", stat="mean square" if rms else "variance", name=name,
                           params=", ".join(c_params), schedule=omp_schedule(params), stats=stats,
                           simd=simd_pragma(params), affine=affine)
    bound = ctx.scalar(spec["eps"])
    eps_arg, eps_value = (bound[0], bound[1]) if bound else ("eps", ctx.literal(spec["eps"]))
    host_params = ["x: torch.Tensor", *(["weight: torch.Tensor"] if weight else []),
                   *(["bias: torch.Tensor"] if bias else []), f"{eps_arg}: float"]
    tensors = ["x", *(["weight.contiguous()"] if weight else []), *(["bias.contiguous()"] if bias else [])]
    host = [f"def {name}({', '.join(host_params)}) -> torch.Tensor:",
            f'    """{name} over the last {ndims} dim(s): each row of x.reshape(-1, cols) is one iteration."""',
            "    x = x.contiguous()",
            "    out = torch.empty_like(x)",
            f"    cols = math.prod(x.shape[-{ndims}:])",
            "    if out.numel():",
            f"        lib.{name}_rows({', '.join(tensors)}, out, out.numel() // cols, cols, float({eps_arg}))",
            "    return out"]
    args = [ctx.forward_arg(spec["x"].index), *(ctx.param_access(p.ref) for p in (weight, bias) if p), eps_value]
    knobs = ", ".join(f"{k}={v}" for k, v in params.items())
    doc = (f"{match.kind} over the last {ndims} dim(s) in C (offline engine, no LLM, backend cpu).\n\n"
           f"out = {formula}\nParameters: {knobs}.\n")
    return module_source(doc, prelude() + "\n\n" + kernel, [f"void {name}_rows({', '.join(c_params)})"], name,
                         ["\n".join(host)], ctx, [f"return {name}({', '.join(args)})"], uses_math=True)



"""Softmax and log-softmax along one dim in C, one row per OpenMP iteration.

Each row takes three vectorised passes over memory that stays in cache: the
max, then exp(x - max) written to the output while summing it, then the scale
by 1 / sum (log-softmax: x - max - log(sum), nothing stored in the second
pass). A dim other than the last is moved last first.
"""

from __future__ import annotations

from typing import Any

from .common import module_source, omp_schedule, require_float32, simd_pragma
from .mathlib import prelude

PARAM_SPACE: list[dict[str, Any]] = [
    {"schedule": "static", "acc": "float", "simdlen": 0},
    {"schedule": "static", "acc": "float", "simdlen": 16},
    {"schedule": "dynamic", "acc": "float", "simdlen": 8},
    {"schedule": "static", "acc": "double", "simdlen": 0},
]

KERNEL = '''/* {what} of each row of a contiguous (rows, cols) matrix.
   x, out: input and output rows; the sum of exponentials is accumulated in {acc}. */
void {name}_rows(const float* x, float* out, int64_t rows, int64_t cols) {{
    #pragma omp parallel for {schedule} if(rows * cols >= KF_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {{
        const float* xr = x + r * cols;
        float* yr = out + r * cols;
        float m = -INFINITY;
        {simd_max}
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        {acc} s = 0;
        {simd_sum}
        for (int64_t c = 0; c < cols; c++) {{
            const float e = kf_exp(xr[c] - m);
{store_e}            s += e;
        }}
{finish}
    }}
}}'''

_FINISH = {
    False: ("            yr[c] = e;\n",
            "        const float inv = (float)(1.0 / s);\n        {simd}\n"
            "        for (int64_t c = 0; c < cols; c++) yr[c] *= inv;"),
    True: ("",
           "        const float lse = (float)log((double)s);\n        {simd}\n"
           "        for (int64_t c = 0; c < cols; c++) yr[c] = (xr[c] - m) - lse;"),
}


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    log, dim, nd = spec["log"], spec["dim"], len(spec["out_shape"])
    require_float32(match.ctx.outputs[0].get("dtype"), spec["x"].dtype)
    name = "log_softmax" if log else "softmax"
    store_e, finish = _FINISH[log]
    kernel = KERNEL.format(
        name=name, acc=params["acc"], schedule=omp_schedule(params),
        what="log(softmax(x)) = x - max - log(sum(exp(x - max)))" if log else
        "softmax(x) = exp(x - max) / sum(exp(x - max))",
        simd_max=simd_pragma(params, "reduction(max:m)"), simd_sum=simd_pragma(params, "reduction(+:s)"),
        store_e=store_e, finish=finish.format(simd=simd_pragma(params)))
    c_fn = f"void {name}_rows(const float* x, float* out, int64_t rows, int64_t cols)"
    last = dim == nd - 1
    host = [f"def {name}(x: torch.Tensor) -> torch.Tensor:",
            f'    """{name} along dim {dim}: rows of the last dim, one OpenMP iteration each."""',
            *([] if last else [f"    x = x.movedim({dim}, -1)"]),
            "    x = x.contiguous()",
            "    out = torch.empty_like(x)",
            "    cols = x.shape[-1] if x.dim() else 1",
            "    if out.numel():",
            f"        lib.{name}_rows(x, out, out.numel() // cols, cols)",
            f"    return {'out' if last else f'out.movedim(-1, {dim})'}"]
    knobs = ", ".join(f"{k}={v}" for k, v in params.items())
    doc = f"{match.kind} along dim {dim} in C (offline engine, no LLM, backend cpu).\n\nParameters: {knobs}.\n"
    arg = ctx.forward_arg(spec["x"].index)
    return module_source(doc, prelude({"kf_exp"}) + "\n\n" + kernel, [c_fn], name, ["\n".join(host)], ctx,
                         [f"return {name}({arg})"])

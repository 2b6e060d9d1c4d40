"""``torch.triu`` / ``torch.tril`` in C: the last two dims read as (batch, M, N) rows,
each row copying the columns on the kept side of the diagonal and zeroing the rest
(two vector loops split at the diagonal, no per-element test)."""

from __future__ import annotations

from typing import Any

from ...spaces import param_space
from ..common import c_doc, module_source, omp_schedule, require_float32, simd_pragma
from ..mathlib import prelude

PARAM_SPACE: list[dict[str, Any]] = param_space("cpu", "triangle")

KERNEL = '''/* y[b, i, j] = x[b, i, j] where j - i {cmp} diagonal, else 0, over contiguous (B, M, N). */
void triangle(const float* x, float* y, int64_t B, int64_t M, int64_t N, int64_t diagonal) {{
    #pragma omp parallel for collapse(2) {schedule} if(B * M * N > {par_min})
    for (int64_t b = 0; b < B; b++)
    for (int64_t i = 0; i < M; i++) {{
        const float* xr = x + (b * M + i) * N;
        float* yr = y + (b * M + i) * N;
        int64_t cut = i + diagonal{shift};  /* the first column of the second part */
        cut = cut < 0 ? 0 : cut > N ? N : cut;
        {simd}
        for (int64_t j = 0; j < cut; j++) yr[j] = {first};
        {simd}
        for (int64_t j = cut; j < N; j++) yr[j] = {second};
    }}
}}'''


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    require_float32(match.ctx.outputs[0].get("dtype"), spec["x"].dtype)
    upper = spec["upper"]
    # triu keeps j >= i + d: zeros first; tril keeps j <= i + d: values up to column i + d
    kernel = KERNEL.format(cmp=">=" if upper else "<=", schedule=omp_schedule(params), par_min=params["par_min"],
                           shift="" if upper else " + 1", simd=simd_pragma(params),
                           first="0.0f" if upper else "xr[j]", second="xr[j]" if upper else "0.0f")
    proto = "void triangle(const float* x, float* y, int64_t B, int64_t M, int64_t N, int64_t diagonal)"
    what = "triu" if upper else "tril"
    host = [f"def {what}(x: torch.Tensor, diagonal: int) -> torch.Tensor:",
            f'    """torch.{what} over the last two dims."""',
            "    x = x.contiguous()",
            "    out = torch.empty_like(x)",
            "    if out.numel():",
            "        M, N = x.shape[-2], x.shape[-1]",
            "        lib.triangle(x, out, x.numel() // (M * N), M, N, diagonal)",
            "    return out"]
    doc = c_doc(match.kind, params)
    return module_source(doc, prelude() + "\n\n" + kernel, [proto], "triangle", ["\n".join(host)], ctx,
                         [f"return {what}({ctx.leaf_arg(spec['x'])}, {spec['diagonal']})"])

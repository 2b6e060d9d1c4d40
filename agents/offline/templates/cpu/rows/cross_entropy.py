"""The per-row cross-entropy term in C: loss[i] = logsumexp(x[i, :]) - x[i, t[i]], one row
per OpenMP iteration (a vector max, then a vector sum of exp(x - max) in the chosen
accumulator). A target equal to ignore_index, or outside [0, C), makes the host raise:
torch leaves ignored rows out of the mean, and this kernel does not."""

from __future__ import annotations

from typing import Any

from ...spaces import param_space
from ..common import c_doc, module_source, omp_schedule, require_float32, simd_pragma
from ..mathlib import prelude

PARAM_SPACE: list[dict[str, Any]] = param_space("cpu", "cross_entropy")

KERNEL = '''/* loss[i] = log(sum_j exp(x[i, j])) - x[i, t[i]] over contiguous x (B, C); t in [0, C). */
void xent_rows(const float* x, const int64_t* t, float* loss, int64_t B, int64_t C) {{
    #pragma omp parallel for {schedule} if(B * C > {par_min})
    for (int64_t i = 0; i < B; i++) {{
        const float* xr = x + i * C;
        float m = -INFINITY;
        {simd_max}
        for (int64_t j = 0; j < C; j++) m = xr[j] > m ? xr[j] : m;
        {acc} s = 0;
        {simd_sum}
        for (int64_t j = 0; j < C; j++) s += kf_exp(xr[j] - m);
        loss[i] = m + logf((float)s) - xr[t[i]];
    }}
}}'''

PROTO = "void xent_rows(const float* x, const int64_t* t, float* loss, int64_t B, int64_t C)"

HOST = '''def cross_entropy_rows(x: torch.Tensor, t: torch.Tensor, ignore_index: int) -> torch.Tensor:
    """logsumexp(x[i]) - x[i, t[i]] per row."""
    x, t = x.contiguous(), t.contiguous()
    B, C = x.shape
    if B and bool(((t < 0) | (t >= C)).any()):
        bad = "ignore_index" if bool((t == ignore_index).any()) else "out of range"
        raise ValueError(f"cross entropy: a target is {bad} (rows left out of the mean are not covered)")
    out = torch.empty(B, dtype=x.dtype, device=x.device)
    if B:
        lib.xent_rows(x, t, out, B, C)
    return out
'''


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    require_float32(spec["x"].dtype)
    kernel = KERNEL.format(schedule=omp_schedule(params), par_min=int(params["par_min"]), acc=params["acc"],
                           simd_max=simd_pragma(params, "reduction(max:m)"),
                           simd_sum=simd_pragma(params, "reduction(+:s)"))
    doc = c_doc(match.kind, params)
    call = f"return cross_entropy_rows({ctx.leaf_arg(spec['x'])}, {ctx.leaf_arg(spec['t'])}, {spec['ignore_index']})"
    return module_source(doc, prelude({"kf_exp"}) + "\n\n" + kernel, [PROTO], "xent_rows", [HOST], ctx, [call])

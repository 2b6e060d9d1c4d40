"""cumsum and cumprod along one dim in C, forward or reversed (``flip, scan, flip``).

The input is read in place as (outer, n, inner). With inner == 1 each row is one
OpenMP iteration walking its n values in order (a scan is sequential along its
dim) eight at a time, so the carried value takes one operation per eight;
otherwise each iteration owns a TILE-wide strip of the contiguous inner dim and
walks j, the vector loop over the strip carrying TILE running values. The
running value is kept in ``acc`` (double by default: torch accumulates float
scans in double on the CPU).
"""

from __future__ import annotations

from typing import Any

from .common import module_source, omp_schedule, require_float32, simd_pragma
from .mathlib import prelude

PARAM_SPACE: list[dict[str, Any]] = [
    {"schedule": "static", "acc": "double", "TILE": 64, "simdlen": 0, "par_min": 16384},
    {"schedule": "static", "acc": "float", "TILE": 256, "simdlen": 16, "par_min": 16384},
    {"schedule": "dynamic", "acc": "double", "TILE": 128, "simdlen": 8, "par_min": 65536},
    {"schedule": "static", "acc": "double", "TILE": 16, "simdlen": 0, "par_min": 4096},
]

KERNEL = '''/* y[o, j, i] = the running {what} of x[o, :, i] up to j ({direction}) over a contiguous
   (outer, n, inner) array. Each OpenMP iteration owns a strip of at most {tile} consecutive i. */
void scan_{combine}(const float* x, float* y, int64_t outer, int64_t n, int64_t inner) {{
    if (inner == 1) {{
        /* along the last dim: one row per iteration, 8 values at a time -- their local running
           {what}s first (independent of the carry), then the carry joins each, so the serial
           chain through the carry is one operation per 8 values */
        #pragma omp parallel for {schedule} if(outer * n > {par_min})
        for (int64_t o = 0; o < outer; o++) {{
            const float* xr = x + o * n;
            float* yr = y + o * n;
            {acc} a = {init};
            int64_t s = 0;
            for (; s + 8 <= n; s += 8) {{
                {acc} p[8];
                p[0] = xr[{j8}];
                for (int k = 1; k < 8; k++) p[k] = p[k - 1] {op} xr[{j8k}];
                for (int k = 0; k < 8; k++) yr[{j8k}] = (float)(a {op} p[k]);
                a = a {op} p[7];
            }}
            for (; s < n; s++) {{ a {op}= xr[{j}]; yr[{j}] = (float)a; }}
        }}
        return;
    }}
    const int64_t strips = (inner + {tile} - 1) / {tile};
    #pragma omp parallel for collapse(2) {schedule} if(outer * n * inner > {par_min})
    for (int64_t o = 0; o < outer; o++) {{
        for (int64_t t = 0; t < strips; t++) {{
            const int64_t i0 = t * {tile};
            const int64_t w = inner - i0 < {tile} ? inner - i0 : {tile};
            const float* xo = x + o * n * inner + i0;
            float* yo = y + o * n * inner + i0;
            {acc} a[{tile}];
            for (int64_t i = 0; i < w; i++) a[i] = {init};
            for (int64_t s = 0; s < n; s++) {{
                const int64_t j = {j};
                {simd}
                for (int64_t i = 0; i < w; i++) {{ a[i] {op}= xo[j * inner + i]; yo[j * inner + i] = (float)a[i]; }}
            }}
        }}
    }}
}}'''


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    require_float32(match.ctx.outputs[0].get("dtype"), spec["x"].dtype)
    combine, dim, reverse = spec["combine"], spec["dim"], spec["reverse"]
    kernel = KERNEL.format(what="sum" if combine == "sum" else "product", combine=combine, tile=params["TILE"],
                           direction="from the end" if reverse else "from the start", schedule=omp_schedule(params),
                           par_min=params["par_min"], acc=params["acc"], init="0" if combine == "sum" else "1",
                           j="n - 1 - s" if reverse else "s", simd=simd_pragma(params),
                           j8="n - 1 - s" if reverse else "s", j8k="n - 1 - (s + k)" if reverse else "s + k",
                           op="+" if combine == "sum" else "*")
    proto = f"void scan_{combine}(const float* x, float* y, int64_t outer, int64_t n, int64_t inner)"
    host = [f"def cum{combine}(x: torch.Tensor) -> torch.Tensor:",
            f'    """cum{combine} along dim {dim}{", reversed" if reverse else ""}."""',
            "    x = x.contiguous()",
            "    out = torch.empty_like(x)",
            "    if out.numel() == 0:", "        return out",
            f"    inner = math.prod(x.shape[{dim + 1}:])",
            f"    lib.scan_{combine}(x, out, x.numel() // (x.shape[{dim}] * inner), x.shape[{dim}], inner)",
            "    return out"]
    knobs = ", ".join(f"{k}={v}" for k, v in params.items())
    doc = (f"{match.kind} along dim {dim} in C (offline engine, no LLM, backend cpu).\n\n"
           f"Parameters: {knobs}.\n")
    return module_source(doc, prelude() + "\n\n" + kernel, [proto], f"scan_{combine}", ["\n".join(host)], ctx,
                         [f"return cum{combine}({ctx.forward_arg(spec['x'].index)})"], uses_math=True)

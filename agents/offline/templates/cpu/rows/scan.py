"""cumsum and cumprod along one dim in C, forward, reversed (``flip, scan, flip``) or
exclusive (each value the scan of the values before it: ``cat((zeros, cumsum(x[:n-1])))``).

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

from ...spaces import param_space
from ..common import module_source, omp_schedule, require_float32, simd_pragma, strips
from ..mathlib import prelude

PARAM_SPACE: list[dict[str, Any]] = param_space("cpu", "scan")

KERNEL = '''/* y[o, j, i] = the running {what} of x[o, :, i] up to j ({direction}{excluded}) over a contiguous
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
{row_store}
                a = a {op} p[7];
            }}
            for (; s < n; s++) {{ {row_tail} }}
        }}
        return;
    }}
''' + strips("outer * n * inner > {par_min}", "w", "n") + '''\
            float* yo = y + o * n * inner + i0;
            {acc} a[{tile}];
            for (int64_t i = 0; i < w; i++) a[i] = {init};
            for (int64_t s = 0; s < n; s++) {{
                const int64_t j = {j};
                {simd}
                for (int64_t i = 0; i < w; i++) {{ {strip_step} }}
            }}
        }}
    }}
}}'''


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    require_float32(match.ctx.outputs[0].get("dtype"), spec["x"].dtype)
    combine, dim, reverse, exclusive = spec["combine"], spec["dim"], spec["reverse"], spec.get("exclusive", False)
    op = "+" if combine == "sum" else "*"
    j, j8k = ("n - 1 - s", "n - 1 - (s + k)") if reverse else ("s", "s + k")  # j: also the block's first
    if exclusive:  # each value stored before it joins the running value
        row_store = (f"                yr[{j}] = (float)a;\n"
                     f"                for (int k = 1; k < 8; k++) yr[{j8k}] = (float)(a {op} p[k - 1]);")
        row_tail = f"yr[{j}] = (float)a; a {op}= xr[{j}];"
        strip_step = f"yo[j * inner + i] = (float)a[i]; a[i] {op}= xo[j * inner + i];"
    else:
        row_store = f"                for (int k = 0; k < 8; k++) yr[{j8k}] = (float)(a {op} p[k]);"
        row_tail = f"a {op}= xr[{j}]; yr[{j}] = (float)a;"
        strip_step = f"a[i] {op}= xo[j * inner + i]; yo[j * inner + i] = (float)a[i];"
    kernel = KERNEL.format(what="sum" if combine == "sum" else "product", combine=combine, tile=params["TILE"],
                           direction="from the end" if reverse else "from the start",
                           excluded=", j itself excluded" if exclusive else "", schedule=omp_schedule(params),
                           par_min=params["par_min"], acc=params["acc"], init="0" if combine == "sum" else "1",
                           j=j, simd=simd_pragma(params), j8=j, j8k=j8k, op=op,
                           row_store=row_store, row_tail=row_tail, strip_step=strip_step)
    proto = f"void scan_{combine}(const float* x, float* y, int64_t outer, int64_t n, int64_t inner)"
    host = [f"def cum{combine}(x: torch.Tensor) -> torch.Tensor:",
            f'    """cum{combine} along dim {dim}{", reversed" if reverse else ""}{", exclusive" if exclusive else ""}."""',
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

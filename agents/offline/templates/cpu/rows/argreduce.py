"""argmax and argmin over one dim (or the whole tensor) in C, int64 indices.

The input is read in place as (outer, red, inner). argmin is argmax of -x (the
same first index on ties, NaN still NaN). With inner == 1 each row takes two
passes: a vectorised max (and whether a NaN was seen), then the first index
holding it -- the first NaN if there was one, as torch answers. Otherwise each
OpenMP iteration owns a TILE-wide strip of the contiguous inner dim and keeps a
running best value and index per position, replacing only on a strictly
greater value (or a first NaN), so ties keep the first index.
"""

from __future__ import annotations

from typing import Any

from ...spaces import param_space
from ..common import module_source, omp_schedule, require_float32, simd_pragma, strips
from ..mathlib import prelude

PARAM_SPACE: list[dict[str, Any]] = param_space("cpu", "argreduce")

ROWS = '''/* out[r] = the first index of the maximum of {sign}x over row r of a contiguous (rows, red) matrix
   (the first NaN when the row holds one). */
void arg_rows(const float* x, int64_t* out, int64_t rows, int64_t red) {{
    #pragma omp parallel for {schedule} if(rows * red > {par_min})
    for (int64_t r = 0; r < rows; r++) {{
        const float* xr = x + r * red;
        float m = -INFINITY;
        int nan = 0;
        {simd_max}
        for (int64_t j = 0; j < red; j++) {{
            const float v = {sign}xr[j];
            m = v > m ? v : m;
            nan |= v != v;
        }}
        int64_t at = 0;
        for (int64_t j = 0; j < red; j++) {{
            const float v = {sign}xr[j];
            if (nan ? v != v : v == m) {{ at = j; break; }}
        }}
        out[r] = at;
    }}
}}'''

COLS = '''/* out[o, i] = the first j maximising {sign}x[o, j, i] over a contiguous (outer, red, inner) array
   (the first NaN when there is one). Each OpenMP iteration owns {tile} consecutive i. */
void arg_cols(const float* x, int64_t* out, int64_t outer, int64_t red, int64_t inner) {{
''' + strips("outer * red * inner > {par_min}", "n", "red") + '''\
            float best[{tile}];
            int64_t at[{tile}];
            {simd}
            for (int64_t i = 0; i < n; i++) {{ best[i] = {sign}xo[i]; at[i] = 0; }}
            for (int64_t j = 1; j < red; j++) {{
                const float* xj = xo + j * inner;
                {simd}
                for (int64_t i = 0; i < n; i++) {{
                    const float v = {sign}xj[i];
                    const int better = v > best[i] || (v != v && best[i] == best[i]);
                    best[i] = better ? v : best[i];
                    at[i] = better ? j : at[i];
                }}
            }}
            for (int64_t i = 0; i < n; i++) out[o * inner + i0 + i] = at[i];
        }}
    }}
}}'''


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    require_float32(spec["x"].dtype)
    which, dim, nd, keepdim = spec["which"], spec["dim"], spec["ndim"], spec["keepdim"]
    sign = "-" if which == "min" else ""
    cols = dim is not None and dim < nd - 1
    if cols:
        kernel = COLS.format(sign=sign, tile=params["TILE"], schedule=omp_schedule(params), simd=simd_pragma(params),
                             par_min=params["par_min"])
        proto = "void arg_cols(const float* x, int64_t* out, int64_t outer, int64_t red, int64_t inner)"
    else:
        kernel = ROWS.format(sign=sign, schedule=omp_schedule(params), par_min=params["par_min"],
                             simd_max=simd_pragma(params, "reduction(max:m) reduction(|:nan)"))
        proto = "void arg_rows(const float* x, int64_t* out, int64_t rows, int64_t red)"
    if dim is None:
        out_shape = "[1] * x.dim()" if keepdim else "[]"
    elif keepdim:
        out_shape = f"[1 if d == {dim} else s for d, s in enumerate(x.shape)]"
    else:
        out_shape = f"[s for d, s in enumerate(x.shape) if d != {dim}]"
    host = [f"def arg{which}(x: torch.Tensor) -> torch.Tensor:",
            f'    """arg{which} over {"every dim" if dim is None else f"dim {dim}"}, int64 indices."""',
            "    x = x.contiguous()",
            f"    out = torch.empty({out_shape}, dtype=torch.int64, device=x.device)",
            "    if out.numel() == 0:", "        return out"]
    if dim is None:
        host.append("    lib.arg_rows(x, out, 1, x.numel())")
    elif cols:
        host += [f"    inner = math.prod(x.shape[{dim + 1}:])",
                 f"    lib.arg_cols(x, out, out.numel() // inner, x.shape[{dim}], inner)"]
    else:
        host.append(f"    lib.arg_rows(x, out, out.numel(), x.shape[{dim}])")
    host.append("    return out")
    knobs = ", ".join(f"{k}={v}" for k, v in params.items() if k != "TILE" or cols)
    doc = (f"arg{which} over {'every dim' if dim is None else f'dim {dim}'} in C (offline engine, no LLM, "
           f"backend cpu), read as {'strips of the inner dim' if cols else 'rows'}.\n\nParameters: {knobs}.\n")
    name = "arg_cols" if cols else "arg_rows"
    return module_source(doc, prelude() + "\n\n" + kernel, [proto], f"arg{which}_{name}", ["\n".join(host)], ctx,
                         [f"return arg{which}({ctx.forward_arg(spec['x'].index)})"], uses_math=cols)

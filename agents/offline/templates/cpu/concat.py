"""``torch.cat`` along one dim in C: a copy. The output is read as (outer, total, inner)
bytes and each input as (outer, n_k, inner): input k's rows land at a byte offset of
every output row. The work is cut into blocks of BLOCK bytes (a row of a cat along dim
0 is the whole input: one memcpy a thread would not share), one OpenMP iteration a block;
dtype-agnostic, as memcpy is."""

from __future__ import annotations

from typing import Any

from ..spaces import param_space
from .common import c_doc, module_source, omp_schedule

PARAM_SPACE: list[dict[str, Any]] = param_space("cpu", "concat")

KERNEL = '''#include <stdint.h>
#include <string.h>

/* y[o, offset : offset + chunk] = x[o, :] (bytes) for each of the outer rows, in blocks of {block}
   bytes: one input's part of the output, whose rows are row bytes long. */
void concat_part(const void* x, void* y, int64_t outer, int64_t chunk, int64_t row, int64_t offset) {{
    const char* src = (const char*)x;
    char* dst = (char*)y;
    const int64_t per_row = (chunk + {block} - 1) / {block};
    #pragma omp parallel for {schedule} if(outer * chunk > {par_min})
    for (int64_t t = 0; t < outer * per_row; t++) {{
        const int64_t o = t / per_row, b = (t % per_row) * {block};
        const int64_t n = chunk - b < {block} ? chunk - b : {block};
        memcpy(dst + o * row + offset + b, src + o * chunk + b, (size_t)n);
    }}
}}'''

PROTO = "void concat_part(const void* x, void* y, int64_t outer, int64_t chunk, int64_t row, int64_t offset)"


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    dim = spec["dim"]
    kernel = KERNEL.format(block=params["BLOCK"], schedule=omp_schedule(params), par_min=params["par_min"])
    host = ["def concat(xs: list[torch.Tensor]) -> torch.Tensor:",
            f'    """torch.cat(xs, dim={dim}), one input\'s part a call."""',
            "    xs = [x.contiguous() for x in xs]",
            f"    shape = [*xs[0].shape[:{dim}], sum(x.shape[{dim}] for x in xs), *xs[0].shape[{dim} + 1:]]",
            "    out = torch.empty(shape, dtype=xs[0].dtype)",
            "    if out.numel() == 0:",
            "        return out",
            f"    outer = math.prod(shape[:{dim}])",
            "    row = out.numel() // outer * out.element_size()",
            "    offset = 0",
            "    for x in xs:",
            "        chunk = x.numel() // outer * x.element_size()",
            "        if chunk:",
            "            lib.concat_part(x, out, outer, chunk, row, offset)",
            "        offset += chunk",
            "    return out"]
    doc = c_doc(match.kind, params)
    args = ", ".join(ctx.forward_arg(x.index) for x in spec["xs"])
    return module_source(doc, kernel, [PROTO], "concat", ["\n".join(host)], ctx, [f"return concat([{args}])"],
                         uses_math=True)

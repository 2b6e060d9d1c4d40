"""A transpose / permute made contiguous, in C: a copy. The output (up to 6 dims, padded
with leading 1s) is walked in order, one OpenMP iteration per run of its last dim; each run
gathers from the input at the stride the permutation gives that dim: where the last dim stays
last (a head split (B, L, H, D) -> (B, H, L, D)) each run is one memcpy; where it moves, the
output is copied in TILE x TILE blocks (TILE rows, TILE columns), so both sides of the copy
stay in cache. Any element size (1, 2, 4 or 8 bytes)."""

from __future__ import annotations

from typing import Any

from ..common import gather_head
from ..spaces import param_space
from .common import NotRenderable, c_doc, module_source, omp_schedule

PARAM_SPACE: list[dict[str, Any]] = param_space("cpu", "permute")

HEAD = """#include <stdint.h>
#include <string.h>
"""

# the row's position in the input: its output index split over dims 0-4, times their strides
_AT = ("int64_t q = r, at = 0; at += (q % n4) * s4; q /= n4; at += (q % n3) * s3; q /= n3; "
       "at += (q % n2) * s2; q /= n2; at += (q % n1) * s1; q /= n1; at += q * s0;")

TYPED = '''/* Blocks of {tile} output rows by {tile} columns of {ctype} elements; each row gathers at stride s5. */
static void permute_{ctype}(const {ctype}* src, {ctype}* dst, int64_t rows, int64_t n1, int64_t n2, int64_t n3,
                            int64_t n4, int64_t n5, int64_t s0, int64_t s1, int64_t s2, int64_t s3, int64_t s4,
                            int64_t s5) {{
    const int64_t ncol = (n5 + {tile} - 1) / {tile}, nblk = ((rows + {tile} - 1) / {tile}) * ncol;
    #pragma omp parallel for {schedule} if(rows * n5 > {par_min})
    for (int64_t blk = 0; blk < nblk; blk++) {{
        const int64_t r0 = (blk / ncol) * {tile}, c0 = (blk % ncol) * {tile};
        const int64_t r1 = r0 + {tile} < rows ? r0 + {tile} : rows, c1 = c0 + {tile} < n5 ? c0 + {tile} : n5;
        for (int64_t r = r0; r < r1; r++) {{
            {at}
            const {ctype}* from = src + at;
            {ctype}* to = dst + r * n5;
            for (int64_t c = c0; c < c1; c++) to[c] = from[c * s5];
        }}
    }}
}}'''

MAIN = '''/* y = x permuted, contiguous: y[i0..i5] = x[i0 * s0 + ... + i5 * s5] (strides in elements). */
void permute_copy(const void* x, void* y, int64_t esize, int64_t n0, int64_t n1, int64_t n2, int64_t n3,
                  int64_t n4, int64_t n5, int64_t s0, int64_t s1, int64_t s2, int64_t s3, int64_t s4, int64_t s5) {{
    const int64_t rows = n0 * n1 * n2 * n3 * n4;
    if (s5 == 1) {{  /* the last dim stays last: whole runs, one memcpy each */
        const char* src = (const char*)x;
        char* dst = (char*)y;
        #pragma omp parallel for {schedule} if(rows * n5 > {par_min})
        for (int64_t r = 0; r < rows; r++) {{
            {at}
            memcpy(dst + r * n5 * esize, src + at * esize, (size_t)(n5 * esize));
        }}
    }} else if (esize == 4) {{
        permute_uint32_t((const uint32_t*)x, (uint32_t*)y, rows, n1, n2, n3, n4, n5, s0, s1, s2, s3, s4, s5);
    }} else if (esize == 8) {{
        permute_uint64_t((const uint64_t*)x, (uint64_t*)y, rows, n1, n2, n3, n4, n5, s0, s1, s2, s3, s4, s5);
    }} else if (esize == 2) {{
        permute_uint16_t((const uint16_t*)x, (uint16_t*)y, rows, n1, n2, n3, n4, n5, s0, s1, s2, s3, s4, s5);
    }} else {{
        permute_uint8_t((const uint8_t*)x, (uint8_t*)y, rows, n1, n2, n3, n4, n5, s0, s1, s2, s3, s4, s5);
    }}
}}'''


def kernel_source(params: dict[str, Any]) -> str:
    fmt = dict(tile=params["TILE"], schedule=omp_schedule(params), par_min=params["par_min"], at=_AT)
    typed = [TYPED.format(ctype=t, **fmt) for t in ("uint8_t", "uint16_t", "uint32_t", "uint64_t")]
    return "\n\n".join([HEAD, *typed, MAIN.format(**fmt)])


PROTO = ("void permute_copy(const void* x, void* y, int64_t esize, int64_t n0, int64_t n1, int64_t n2, int64_t n3, "
         "int64_t n4, int64_t n5, int64_t s0, int64_t s1, int64_t s2, int64_t s3, int64_t s4, int64_t s5)")

MAX_DIMS = 6


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    perm = tuple(match.spec["perm"])
    if len(perm) > MAX_DIMS:
        raise NotRenderable(f"a permute of {len(perm)} dims (the C template copies up to {MAX_DIMS})")
    kernel = kernel_source(params)
    host = ["def permute(x: torch.Tensor) -> torch.Tensor:",
            *gather_head(match.spec),
            "    if out.numel():",
            f"        pad = {MAX_DIMS} - len(perm)",
            "        sizes = [1] * pad + list(out.shape)",
            "        strides = [0] * pad + [x.stride(p) * steps[p] for p in perm]",
            "        lib.permute_copy(src, out, x.element_size(), *sizes, *strides)",
            "    return out"]
    doc = c_doc(match.kind, params)
    return module_source(doc, kernel, [PROTO], "permute", ["\n".join(host)], ctx,
                         [f"return permute({ctx.forward_arg(match.spec['x'].index)})"])

"""``F.pad`` with a constant in C: a copy. The output (up to 6 dims, padded with leading 1s)
is walked one run of its last dim an OpenMP iteration: a run whose row lies outside the input
is all fill; else its fill before, one memcpy of the input's row, its fill after. A negative
pad crops. Any element size for a fill of 0 (memset); a non-zero fill for float32 and
float64."""

from __future__ import annotations

from typing import Any

from ..common import pad_settings
from ..spaces import param_space
from .common import NotRenderable, c_doc, module_source, omp_schedule

PARAM_SPACE: list[dict[str, Any]] = param_space("cpu", "pad")

KERNEL = '''#include <stdint.h>
#include <string.h>

/* n elements of fill at dst: zero bytes (kind 0), float (1) or double (2) */
static void fill_run(char* dst, int64_t n, int64_t esize, int64_t kind, double fill) {{
    if (n <= 0) return;
    if (kind == 1) {{
        float* d = (float*)dst;
        for (int64_t j = 0; j < n; j++) d[j] = (float)fill;
    }} else if (kind == 2) {{
        double* d = (double*)dst;
        for (int64_t j = 0; j < n; j++) d[j] = fill;
    }} else {{
        memset(dst, 0, (size_t)(n * esize));
    }}
}}

/* y[c] = x[c - b] where every c_k - b_k lies in [0, i_k), else fill; o: y's sizes, i: x's
   (contiguous), b: the pads before each dim (negative: cropped). */
void pad_copy(const void* x, void* y, int64_t esize, int64_t kind, double fill, int64_t o0, int64_t o1,
              int64_t o2, int64_t o3, int64_t o4, int64_t o5, int64_t i0, int64_t i1, int64_t i2, int64_t i3,
              int64_t i4, int64_t i5, int64_t b0, int64_t b1, int64_t b2, int64_t b3, int64_t b4, int64_t b5) {{
    const char* src = (const char*)x;
    char* dst = (char*)y;
    const int64_t rows = o0 * o1 * o2 * o3 * o4;
    const int64_t lo = b5 < 0 ? 0 : (b5 > o5 ? o5 : b5);
    int64_t hi = i5 + b5;
    hi = hi < lo ? lo : (hi > o5 ? o5 : hi);
    #pragma omp parallel for {schedule} if(rows * o5 > {par_min})
    for (int64_t r = 0; r < rows; r++) {{
        int64_t q = r;
        const int64_t c4 = q % o4 - b4; q /= o4;
        const int64_t c3 = q % o3 - b3; q /= o3;
        const int64_t c2 = q % o2 - b2; q /= o2;
        const int64_t c1 = q % o1 - b1; q /= o1;
        const int64_t c0 = q - b0;
        char* run = dst + r * o5 * esize;
        if (c0 < 0 || c0 >= i0 || c1 < 0 || c1 >= i1 || c2 < 0 || c2 >= i2 || c3 < 0 || c3 >= i3 || c4 < 0 ||
            c4 >= i4 || hi == lo) {{
            fill_run(run, o5, esize, kind, fill);
            continue;
        }}
        const int64_t row = (((c0 * i1 + c1) * i2 + c2) * i3 + c3) * i4 + c4;
        fill_run(run, lo, esize, kind, fill);
        memcpy(run + lo * esize, src + (row * i5 + lo - b5) * esize, (size_t)((hi - lo) * esize));
        fill_run(run + hi * esize, o5 - hi, esize, kind, fill);
    }}
}}'''

PROTO = ("void pad_copy(const void* x, void* y, int64_t esize, int64_t kind, double fill, int64_t o0, int64_t o1, "
         "int64_t o2, int64_t o3, int64_t o4, int64_t o5, int64_t i0, int64_t i1, int64_t i2, int64_t i3, "
         "int64_t i4, int64_t i5, int64_t b0, int64_t b1, int64_t b2, int64_t b3, int64_t b4, int64_t b5)")

MAX_DIMS = 6
FILL_KINDS = {"float32": 1, "float64": 2}


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    before, after, value = pad_settings(match, MAX_DIMS)
    kind = 0 if value == 0.0 else FILL_KINDS.get(spec["x"].dtype or "float32")
    if kind is None:
        raise NotRenderable(f"a fill of {value} in {spec['x'].dtype} (the C template fills float32 / float64)")
    kernel = KERNEL.format(schedule=omp_schedule(params), par_min=params["par_min"])
    host = ["def pad(x: torch.Tensor) -> torch.Tensor:",
            f'    """F.pad(x) by {before} before and {after} after each dim, filled with {value!r}."""',
            "    x = x.contiguous()",
            f"    before, after = {before!r}, {after!r}",
            "    out = torch.empty([n + b + a for n, b, a in zip(x.shape, before, after)], dtype=x.dtype)",
            "    if out.numel():",
            f"        lead = {MAX_DIMS} - x.dim()",
            f"        lib.pad_copy(x, out, x.element_size(), {kind}, {value!r}, *([1] * lead + list(out.shape)),",
            "                     *([1] * lead + list(x.shape)), *([0] * lead + before))",
            "    return out"]
    doc = c_doc(match.kind, params)
    return module_source(doc, kernel, [PROTO], "pad", ["\n".join(host)], ctx,
                         [f"return pad({ctx.forward_arg(spec['x'].index)})"])

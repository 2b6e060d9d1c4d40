"""Sum, mean, max, min and logsumexp over any set of dims in C.

When the reduced dims are one block of consecutive dims the input is read in
place as (outer, red, inner): inner == 1 (the last dims reduced) is a row
reduction, one row per OpenMP iteration with a vectorised reduction over the
row (fewer than 4 rows -- a reduction to a scalar -- share each row among the threads);
otherwise each iteration owns a TILE-wide strip of the contiguous inner
dim and walks the reduced dim, so the vector loop stays contiguous. Other sets
of dims are moved last (one copy) and reduced as rows. logsumexp takes the max
first and sums exp(x - max), so it never overflows.

Pointwise ops around a row reduction are fused into it: a prologue of the one
input (``x * x`` in sqrt(sum(x * x))) is computed on each element as the row is
read, an epilogue of the result (``sqrt``) before the only store -- one read of
x, no temporary, where a stage per op would write and read two full-size ones.
"""

from __future__ import annotations

import re
from typing import Any

from ...ops import formula
from ...spaces import param_space
from ..common import CWriter, helper_names, module_source, omp_schedule, require_float32, simd_pragma, strips
from ..mathlib import prelude

PARAM_SPACE: list[dict[str, Any]] = param_space("cpu", "reduction")

# op -> (initial value, combine(a, v), omp reduction operator, finish(a) over `red` values, what)
OPS = {
    "sum": ("0", "a + v", "+", "(float)a", "the sum"),
    "mean": ("0", "a + v", "+", "(float)(a / red)", "the mean"),
    "amax": ("-INFINITY", "v > a ? v : a", "max", "a", "the maximum"),
    "amin": ("INFINITY", "v < a ? v : a", "min", "a", "the minimum"),
}

ROWS = '''/* out[r] = {what} of row r of a contiguous (rows, red) matrix. */
void reduce_{op}_rows(const float* x, float* out, int64_t rows, int64_t red{scalars}) {{
    if (rows < 4 && rows * red >= KF_PAR_MIN) {{
        /* a few long rows (a reduction to a scalar): all threads share each row */
        for (int64_t r = 0; r < rows; r++) {{
            const float* xr = x + r * red;
{few}
        }}
        return;
    }}
    #pragma omp parallel for {schedule} if(rows * red >= KF_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {{
        const float* xr = x + r * red;
{body}
    }}
}}'''
ROWS_PLAIN = '''        {acc} a = {init};
        {simd}
        for (int64_t j = 0; j < red; j++) {{ {load} a = {combine}; }}
        {store}'''
ROWS_FEW = '''            {acc} a = {init};
            #pragma omp parallel for simd reduction({red_op}:a)
            for (int64_t j = 0; j < red; j++) {{ {load} a = {combine}; }}
            {store}'''
ROWS_FEW_LSE = '''            float m = -INFINITY;
            #pragma omp parallel for simd reduction(max:m)
            for (int64_t j = 0; j < red; j++) m = xr[j] > m ? xr[j] : m;
            {acc} s = 0;
            #pragma omp parallel for simd reduction(+:s)
            for (int64_t j = 0; j < red; j++) s += kf_exp(xr[j] - m);
            out[r] = isinf(m) ? m : m + (float)log((double)s);'''
ROWS_LSE = '''        float m = -INFINITY;
        {simd_max}
        for (int64_t j = 0; j < red; j++) m = xr[j] > m ? xr[j] : m;
        {acc} s = 0;
        {simd_sum}
        for (int64_t j = 0; j < red; j++) s += kf_exp(xr[j] - m);
        out[r] = isinf(m) ? m : m + (float)log((double)s);'''

COLS = '''/* out[o, i] = {what} over j of x[o, j, i], x a contiguous (outer, red, inner) array.
   Each OpenMP iteration owns a strip of {tile} consecutive i. */
void reduce_{op}_cols(const float* x, float* out, int64_t outer, int64_t red, int64_t inner) {{
''' + strips("outer * red * inner >= KF_PAR_MIN", "n", "red") + '''\
            float* yo = out + o * inner + i0;
{body}
        }}
    }}
}}'''
COLS_PLAIN = '''            {acc} a[{tile}];
            float p[{tile}];
            {simd}
            for (int64_t i = 0; i < n; i++) a[i] = {init};
            for (int64_t j0 = 0; j0 < red; j0 += KF_ROWS) {{
                const int64_t j1 = red - j0 < KF_ROWS ? red : j0 + KF_ROWS;
                {simd}
                for (int64_t i = 0; i < n; i++) p[i] = {init};
                int64_t j = j0;
                for (; j + 4 <= j1; j += 4) {{
                    const float *x0 = xo + j * inner, *x1 = x0 + inner, *x2 = x1 + inner, *x3 = x2 + inner;
                    {simd}
                    for (int64_t i = 0; i < n; i++) p[i] = KF_COMB(KF_COMB(KF_COMB(KF_COMB(p[i], x0[i]), x1[i]), x2[i]), x3[i]);
                }}
                for (; j < j1; j++) {{
                    const float* xj = xo + j * inner;
                    {simd}
                    for (int64_t i = 0; i < n; i++) p[i] = KF_COMB(p[i], xj[i]);
                }}
                {simd}
                for (int64_t i = 0; i < n; i++) a[i] = KF_COMB(a[i], ({acc})p[i]);
            }}
            {simd}
            for (int64_t i = 0; i < n; i++) yo[i] = {finish_i};'''
COLS_LSE = '''            float m[{tile}];
            {acc} s[{tile}];
            {simd}
            for (int64_t i = 0; i < n; i++) {{ m[i] = -INFINITY; s[i] = 0; }}
            for (int64_t j = 0; j < red; j++) {{
                const float* xj = xo + j * inner;
                {simd}
                for (int64_t i = 0; i < n; i++) m[i] = xj[i] > m[i] ? xj[i] : m[i];
            }}
            for (int64_t j = 0; j < red; j++) {{
                const float* xj = xo + j * inner;
                {simd}
                for (int64_t i = 0; i < n; i++) s[i] += kf_exp(xj[i] - m[i]);
            }}
            for (int64_t i = 0; i < n; i++) yo[i] = isinf(m[i]) ? m[i] : m[i] + (float)log((double)s[i]);'''


def _layout(dims: tuple[int, ...], nd: int) -> str:
    """rows: the last dims are reduced; cols: a block of dims before the last; moved: anything else."""
    if not dims:
        return "rows"
    if list(dims) != list(range(dims[0], dims[-1] + 1)):
        return "moved"
    return "rows" if dims[-1] == nd - 1 else "cols"


def _at_i(expr: str) -> str:
    """The accumulator ``a`` of an expression as the strip's element ``a[i]``."""
    return re.sub(r"\ba\b", "a[i]", expr)


# names the fused ops' C may not take
_RESERVED = {"a", "v", "j", "r", "xr", "red", "rows", "x", "out", "xv", "rv", "m", "s", "n", "i"}


def _fusion(spec: dict[str, Any], ctx: Any) -> tuple[str, str, str, dict[str, str]]:
    """(what, per-element load, store, scalars) of a fused row reduction: the
    prologue on each element read (``xv``), the epilogue on the result (``rv``)."""
    load, store, scalars = "", "", {}
    what = formula(spec["epilogue"] if spec.get("epilogue") is not None else spec["red"], ctx)
    if spec.get("prologue") is not None:
        w = CWriter(ctx, {id(spec["x"]): "xv"}, reserved=set(_RESERVED))
        res = w.emit(spec["prologue"])
        load = " ".join(["const float xv = xr[j];", *w.lines, f"const {{acc}} v = {res};"])
        scalars.update(w.scalars)
    if spec.get("epilogue") is not None:
        w = CWriter(ctx, {id(spec["red"]): "rv"}, reserved=set(_RESERVED) | set(scalars))
        res = w.emit(spec["epilogue"])
        store = " ".join(["{{ const float rv = {finish};", *w.lines, f"out[r] = {res}; }}}}"])
        scalars.update(w.scalars)
    return what, load, store, scalars


def _kernel(op: str, layout: str, params: dict[str, Any], fusion: tuple[str, str, str, dict[str, str]] | None = None
            ) -> str:
    acc = "float" if op in ("amax", "amin") else params["acc"]
    sched = omp_schedule(params)
    if op == "logsumexp":
        what = "log(sum(exp(.)))"
        if layout == "cols":
            body = COLS_LSE.format(acc=acc, tile=params["TILE"], simd=simd_pragma(params))
            return COLS.format(what=what, op=op, tile=params["TILE"], schedule=sched, body=body)
        body = ROWS_LSE.format(acc=acc, simd_max=simd_pragma(params, "reduction(max:m)"),
                               simd_sum=simd_pragma(params, "reduction(+:s)"))
        return ROWS.format(what=what, op=op, schedule=sched, body=body, few=ROWS_FEW_LSE.format(acc=acc), scalars="")
    init, combine, red_op, finish, what = OPS[op]
    load, store, scalars = "const {acc} v = xr[j];", "out[r] = {finish};", ""
    if fusion is not None:
        what = fusion[0]
        load, store = fusion[1] or load, fusion[2] or store
        scalars = "".join(f", float {name}" for name in fusion[3])
    load, store = load.format(acc=acc), store.format(finish=finish)
    if layout == "cols":
        body = COLS_PLAIN.format(acc=acc, tile=params["TILE"], simd=simd_pragma(params), init=init,
                                 finish_i=_at_i(finish))
        macro = re.sub(r"\bv\b", "(v)", re.sub(r"\ba\b", "(a)", combine))
        return (f"/* rows are combined 4 at a time into float partials, flushed into the {acc} accumulators "
                f"every KF_ROWS rows */\n#define KF_ROWS 64\n#define KF_COMB(a, v) ({macro})\n"
                + COLS.format(what=what, op=op, tile=params["TILE"], schedule=sched, body=body))
    body = ROWS_PLAIN.format(acc=acc, init=init, combine=combine, load=load, store=store,
                             simd=simd_pragma(params, f"reduction({red_op}:a)"))
    few = ROWS_FEW.format(acc=acc, init=init, combine=combine, load=load, store=store, red_op=red_op)
    return ROWS.format(what=what, op=op, schedule=sched, body=body, few=few, scalars=scalars)


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    op, dims, nd, keepdim = spec["op"], tuple(spec["dims"]), spec["ndim"], spec["keepdim"]
    require_float32(match.ctx.outputs[0].get("dtype"), spec["x"].dtype)
    layout = _layout(dims, nd)
    fusion = _fusion(spec, ctx) if spec.get("prologue") is not None or spec.get("epilogue") is not None else None
    kernel = _kernel(op, layout, params, fusion)
    scalars = fusion[3] if fusion else {}
    tail = "".join(f", {name}" for name in scalars)
    kept = [d for d in range(nd) if d not in dims]
    if keepdim:
        out_shape = "[" + ", ".join("1" if d in dims else f"shape[{d}]" for d in range(nd)) + "]"
    else:
        out_shape = "[" + ", ".join(f"shape[{d}]" for d in kept) + ("," if len(kept) == 1 else "") + "]"
    lines = [f"def reduce_{op}(x: torch.Tensor{''.join(f', {n}: float' for n in scalars)}) -> torch.Tensor:",
             f'    """{op} over dims {list(dims)}{" (kept as size 1)" if keepdim else ""}."""',
             "    shape = x.shape"]
    if layout == "moved":
        order = kept + list(dims)
        lines.append(f"    x = x.permute({', '.join(map(str, order))})  # reduced dims last, then one copy")
    lines += ["    x = x.contiguous()",
              f"    out = torch.empty({out_shape}, dtype=torch.float32, device=x.device)",
              f"    red = math.prod(shape[d] for d in {list(dims)})",
              "    if out.numel() == 0:", "        return out"]
    if layout == "cols":
        c_fn = f"void reduce_{op}_cols(const float* x, float* out, int64_t outer, int64_t red, int64_t inner)"
        lines += [f"    inner = math.prod(shape[{dims[-1] + 1}:])",
                  f"    lib.reduce_{op}_cols(x, out, out.numel() // inner, red, inner)"]
    else:
        c_fn = (f"void reduce_{op}_rows(const float* x, float* out, int64_t rows, int64_t red"
                f"{''.join(f', float {n}' for n in scalars)})")
        lines.append(f"    lib.reduce_{op}_rows(x, out, out.numel(), red{tail})")
    lines.append("    return out")
    used = {k: v for k, v in params.items() if k != "TILE" or layout == "cols"}
    if op in ("amax", "amin"):
        used.pop("acc", None)
    knobs = ", ".join(f"{k}={v}" for k, v in used.items())
    doc = (f"{op} over dims {list(dims)} in C (offline engine, no LLM, backend cpu), read as "
           f"{layout if layout != 'moved' else 'rows after moving the reduced dims last'}.\n\n"
           + (f"out = {fusion[0]}: the pointwise ops around it fused (one read of x, one store).\n" if fusion else "")
           + f"Parameters: {knobs}.\n")
    helpers = {"kf_exp"} if op == "logsumexp" else helper_names(kernel)
    call = ", ".join([ctx.forward_arg(spec["x"].index), *scalars.values()])
    return module_source(doc, prelude(helpers) + "\n\n" + kernel, [c_fn],
                         f"reduce_{op}", ["\n".join(lines)], ctx, [f"return reduce_{op}({call})"],
                         uses_math=True)

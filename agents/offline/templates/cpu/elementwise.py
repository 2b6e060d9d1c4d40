"""Elementwise chains in C: any DAG of elementwise ops over same-shape tensors,
broadcast parameters and scalars, as one loop nest with one statement per node.

When every operand is a whole tensor or a single value, the output is walked
flat in BLOCK-element chunks (one chunk per OpenMP iteration, the chunk's loop
vectorised). When some operand broadcasts (a bias per column, a scale per
channel), the output is walked as rows of its last dim: each operand is then
either a contiguous row (vectorised) or one value per row; an operand broadcast over
middle dims (``(B, 1, K)`` into ``(B, D, K)``) reads one of its rows per run of rows.
"""

from __future__ import annotations

from typing import Any

from ...ir.expr import Expr
from ..common import NotRenderable, broadcast_block, broadcast_rows
from ..ops import formula
from .common import INLINE, POSITIVE_FORMS, CWriter, helper_names, module_source, omp_schedule, require_float32, simd_pragma
from .mathlib import prelude

PARAM_SPACE: list[dict[str, Any]] = [
    {"BLOCK": 16384, "schedule": "static", "simdlen": 0},
    {"BLOCK": 4096, "schedule": "static", "simdlen": 16},
    {"BLOCK": 65536, "schedule": "static", "simdlen": 8},
    {"BLOCK": 2048, "schedule": "dynamic", "simdlen": 16},
]


def _kinds(leaves: list[Expr], out_shape: tuple[int, ...]) -> dict[int, tuple[str, int]]:
    """Per leaf: ("full" | "scalar" | "tail" | "per_row" | "rows", hi) -- how row r, column c reads it."""
    nd = len(out_shape)
    out: dict[int, tuple[str, int]] = {}
    for leaf in leaves:
        shape = tuple(leaf.shape or ())
        block = broadcast_block(shape, out_shape)
        rows = broadcast_rows(shape, out_shape) if block is None else None
        lo, hi = block or rows or (0, -1)
        if block is None and rows is None:
            raise NotRenderable(f"{leaf.name}: shape {list(shape)} does not broadcast to {list(out_shape)} by rows")
        if rows is not None:
            out[id(leaf)] = ("rows", hi)
        elif shape == out_shape:
            out[id(leaf)] = ("full", nd - 1)
        elif hi < 0:
            out[id(leaf)] = ("scalar", hi)
        elif hi == nd - 1:
            out[id(leaf)] = ("tail", hi)
        else:
            out[id(leaf)] = ("per_row", hi)
    return out


# The positive fast path: runs of this many elements are checked at once.
FAST_RUN = 64


def _positive_path(root: Expr, leaves: list[Expr], kinds: dict[int, tuple[str, int]], names: dict[int, str],
                   ctx: Any, writer: CWriter, loads: list[str]) -> tuple[list[str], list[str], set[str]] | None:
    """Where ops of POSITIVE_FORMS (elu, selu) apply to full-size inputs: (those inputs, the
    body written for a run where they are all > 0, the ops), else None. Eager's own kernels
    skip the exp of a vector whose lanes are all positive; so does this, per run."""
    inputs = {id(leaf): names[id(leaf)] for leaf in leaves if kinds[id(leaf)][0] == "full"}
    checked: dict[str, None] = {}
    ops: set[str] = set()
    seen: set[int] = set()

    def walk(e: Expr) -> None:
        if id(e) in seen or e.kind != "op":
            return
        seen.add(id(e))
        if e.op in POSITIVE_FORMS and e.args and id(e.args[0]) in inputs:
            checked[inputs[id(e.args[0])]] = None
            ops.add(e.op)
        for a in e.args:
            walk(a)

    walk(root)
    if not checked:
        return None
    fast = CWriter(ctx, {id(leaf): names[id(leaf)] for leaf in leaves}, positive=set(checked))
    fast_result = fast.emit(root)
    if fast.scalars.keys() - writer.scalars.keys():
        return None  # the fast form needs no constant the full one does not
    return list(checked), [*loads, *fast.lines, f"out[i] = {fast_result};"], ops


def _fast_blocks(fast: tuple[list[str], list[str], set[str]], body: list[str], simd: str) -> list[str]:
    checked, fast_body, _ = fast
    test = " || ".join(f"!({v}_p[i] > 0.0f)" for v in checked)  # NaN is not > 0: the full form
    return [f"        for (int64_t i0 = start; i0 < end; i0 += {FAST_RUN}) {{",
            f"            const int64_t i1 = i0 + {FAST_RUN} < end ? i0 + {FAST_RUN} : end;",
            "            int rest = 0;",
            "            #pragma omp simd reduction(|:rest)",
            f"            for (int64_t i = i0; i < i1; i++) rest |= {test};",
            "            if (!rest) {",
            f"                {simd}",
            "                for (int64_t i = i0; i < i1; i++) {",
            *(f"                    {line}" for line in fast_body), "                }",
            "            } else {",
            f"                {simd}",
            "                for (int64_t i = i0; i < i1; i++) {",
            *(f"                    {line}" for line in body), "                }",
            "            }",
            "        }"]


# A pipeline may hand this stage a dead operand shaped like the output to write over
# (templates/pipeline.py: ``donated``): each element is read before its own store.
DONATES = True
FRESH_OUTPUT = True


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    root: Expr = spec["root"]
    leaves: list[Expr] = spec["leaves"]
    out_shape: tuple[int, ...] = spec["out_shape"]
    # a boolean mask reaches the kernel as float32 (Context.leaf_arg)
    require_float32(match.ctx.outputs[0].get("dtype"), *(leaf.dtype for leaf in leaves if leaf.dtype != "bool"))
    kinds = _kinds(leaves, out_shape)
    flat = all(kinds[id(leaf)][0] in ("full", "scalar") for leaf in leaves)
    writer = CWriter(ctx, {})
    names = {id(leaf): writer.name_for(leaf) for leaf in leaves}
    c_params, loads, host_args, prep, docs = [], [], [], [], []
    row_setup: list[str] = []
    hoisted: list[str] = []
    for leaf in leaves:
        v = names[id(leaf)]
        kind, hi = kinds[id(leaf)]
        c_params.append(f"const float* {v}_p")
        host_args.append(v)
        if leaf.kind == "random" and kind != "full":
            raise NotRenderable(f"{leaf.ref}: a random operand not shaped like the output")
        if leaf.kind != "random":  # drawn once the output is allocated (drawn)
            prep.append(f"{v} = {v}.contiguous()")
        what = {"input": f"forward input `{leaf.ref}`", "param": f"parameter `{leaf.ref}`",
                "random": f"dropout mask `{leaf.ref}`"}[leaf.kind]
        if kind == "full":
            loads.append(f"const float {v} = {v}_p[i];" if flat else f"const float {v} = {v}_row[c];")
            row_setup.append(f"const float* {v}_row = {v}_p + r * cols;")
            docs.append(f"{v}_p: {what}, same shape as the output")
        elif kind == "scalar":
            # read once, before the loop: a load inside it may alias the output, which keeps the
            # compiler from vectorising (and from hoisting what is computed from the value)
            hoisted.append(f"const float {v} = {v}_p[0];")
            docs.append(f"{v}_p: {what}, one value")
        elif kind == "tail":
            c_params.append(f"int64_t {v}_rows")
            host_args.append(f"{v}.numel() // cols")
            row_setup.append(f"const float* {v}_row = {v}_p + (r % {v}_rows) * cols;")
            loads.append(f"const float {v} = {v}_row[c];")
            docs.append(f"{v}_p: {what}, broadcast along leading dims: row r reads its row r % {v}_rows")
        elif kind == "rows":
            c_params += [f"int64_t {v}_every", f"int64_t {v}_rows"]
            host_args += [f"math.prod(shape[{hi + 1}:-1])", f"{v}.numel() // cols"]
            row_setup.append(f"const float* {v}_row = {v}_p + ((r / {v}_every) % {v}_rows) * cols;")
            loads.append(f"const float {v} = {v}_row[c];")
            docs.append(f"{v}_p: {what}, broadcast over middle dims: row r reads its row (r / {v}_every) % {v}_rows")
        else:
            c_params += [f"int64_t {v}_every", f"int64_t {v}_numel"]
            host_args += [f"math.prod(shape[{hi + 1}:-1])", f"{v}.numel()"]
            row_setup.append(f"const float {v}_value = {v}_p[(r / {v}_every) % {v}_numel];")
            loads.append(f"const float {v} = {v}_value;")
            docs.append(f"{v}_p: {what}, one value per run of {v}_every rows")
        writer.values[id(leaf)] = v
    result = writer.emit(root)
    fast = _positive_path(root, leaves, kinds, names, ctx, writer, loads) if flat else None
    scalars = list(writer.scalars)
    c_params += ["float* out", *(["int64_t n"] if flat else ["int64_t rows", "int64_t cols"]),
                 *(f"float {s}" for s in scalars)]
    body = [*loads, *writer.lines, f"out[{'i' if flat else 'r * cols + c'}] = {result};"]
    what = formula(root, ctx)
    sched = omp_schedule(params)
    if flat:
        block = int(params["BLOCK"])
        nest = [*(f"    {line}" for line in hoisted),
                f"    const int64_t nblocks = (n + {block} - 1) / {block};",
                f"    #pragma omp parallel for {sched} if(n >= KF_PAR_MIN)",
                "    for (int64_t b = 0; b < nblocks; b++) {",
                f"        const int64_t start = b * {block};",
                f"        const int64_t end = start + {block} < n ? start + {block} : n;",
                *(_fast_blocks(fast, body, simd_pragma(params)) if fast else [
                    f"        {simd_pragma(params)}",
                    "        for (int64_t i = start; i < end; i++) {",
                    *(f"            {line}" for line in body), "        }"]), "    }"]
        walk = f"the flat output in chunks of {block} elements, one chunk per OpenMP iteration"
        if fast:
            walk += (f"; within a chunk, a run of {FAST_RUN} where {', '.join(fast[0])} is all > 0 takes the "
                     "positive form of " + ", ".join(sorted(fast[2])) + " (no exp)")
    else:
        nest = [*(f"    {line}" for line in hoisted),
                f"    #pragma omp parallel for {sched} if(rows * cols >= KF_PAR_MIN)",
                "    for (int64_t r = 0; r < rows; r++) {",
                *(f"        {line}" for line in row_setup),
                f"        {simd_pragma(params)}",
                "        for (int64_t c = 0; c < cols; c++) {",
                *(f"            {line}" for line in body), "        }", "    }"]
        walk = "the output as rows of its last dim, one row per OpenMP iteration"
    c_fn = f"void fused_elementwise({', '.join(c_params)})"
    comment = ["/* out = " + what.replace("*/", "* /") + ".", f"   Walks {walk}.",
               *(f"   {d}" for d in docs), *(f"   {s}: constructor argument" for s in scalars), "*/"]
    kernel = "\n".join([*comment, c_fn + " {", *nest, "}"])
    helpers = helper_names(kernel)
    c_source = prelude(helpers) + "\n\n" + INLINE + "\n\n" + kernel
    wrapper_params = [*(f"{names[id(leaf)]}: torch.Tensor" for leaf in leaves), *(f"{s}: float" for s in scalars)]
    given = [leaf for leaf in leaves if leaf.kind != "random"]  # a random operand has the output's shape
    if not given:
        raise NotRenderable("a random operand alone: no shape to draw it over")
    first = names[id(given[0])]
    over = next((names[id(leaf)] for leaf in given if leaf.kind == "input" and kinds[id(leaf)][0] == "full"
                 and leaf.dtype == "float32" and tuple(leaf.shape or ()) == tuple(out_shape)
                 and ctx.leaf_arg(leaf) in params.get("donated", ())), None)
    drawn = [f"    {names[id(leaf)]} = {ctx.draw(leaf, 'out')}" for leaf in leaves if leaf.kind == "random"]
    host = [f"def fused_elementwise({', '.join(wrapper_params)}) -> torch.Tensor:",
            '    """Allocate the output and run the fused loop over it."""',
            f"    shape = {first}.shape" if len(given) == 1 else
            f"    shape = torch.broadcast_shapes({', '.join(names[id(leaf)] + '.shape' for leaf in given)})",
            *(f"    {line}" for line in prep),
            f"    out = {over}  # written over: dead after this stage" if over else
            f"    out = scratch.empty(shape, dtype=torch.float32, device={first}.device)", *drawn]
    if flat:
        host.append(f"    lib.fused_elementwise({', '.join([*host_args, 'out', 'out.numel()', *scalars])})")
    else:
        host += ["    cols = shape[-1] if len(shape) else 1",
                 "    if out.numel() == 0:", "        return out",
                 f"    lib.fused_elementwise({', '.join([*host_args, 'out', 'out.numel() // cols', 'cols', *scalars])})"]
    host.append("    return out")
    call_args = [ctx.leaf_arg(leaf, drawn=True) for leaf in leaves]
    forward = [f"return fused_elementwise({', '.join([*call_args, *writer.scalars.values()])})"]
    n_ops = len([n for n in root.walk() if n.kind == "op" and n.op not in ("identity", "cast", "view")])
    title = match.kind if n_ops <= 4 else f"A chain of {n_ops} elementwise ops"
    knobs = ", ".join(f"{k}={v}" for k, v in params.items() if (flat or k != "BLOCK") and k != "donated") + \
        (f"; writes over its operand {over}, dead after it" if over else "")
    doc = (f"{title} as one fused C loop (offline engine, no LLM, backend cpu).\n\n"
           f"Parameters: {knobs}.\n")
    return module_source(doc, c_source, [c_fn], "fused_elementwise", ["\n".join(host)], ctx, forward,
                         uses_math=not flat and any(kinds[id(leaf)][0] in ("per_row", "rows") for leaf in leaves))


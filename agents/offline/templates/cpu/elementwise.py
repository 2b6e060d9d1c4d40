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

from dataclasses import dataclass, field
from typing import Any

from ...ir.expr import Expr
from ..common import NotRenderable, Operands, broadcast_block, broadcast_rows, fused_parts
from ..ops import formula
from ..spaces import param_space
from .common import INLINE, POSITIVE_FORMS, CWriter, helper_names, module_source, omp_schedule, require_float32, simd_pragma
from .mathlib import prelude

PARAM_SPACE: list[dict[str, Any]] = param_space("cpu", "elementwise")


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


@dataclass
class _Operands(Operands):
    """What each operand adds to the C function, its loop nest and its host."""

    c_params: list[str] = field(default_factory=list)
    row_setup: list[str] = field(default_factory=list)
    hoisted: list[str] = field(default_factory=list)


def _operand(ops: _Operands, leaf: Expr, v: str, kind: str, hi: int, flat: bool) -> None:
    """One operand ``v`` read as ``kind`` (``_kinds``): its parameters, loads and docs."""
    ct = "bool" if leaf.dtype == "bool" else "float"  # a C bool reads as 0.0f or 1.0f
    ops.c_params.append(f"const {ct}* {v}_p")
    ops.host_args.append(v)
    if leaf.kind == "random" and kind != "full":
        raise NotRenderable(f"{leaf.ref}: a random operand not shaped like the output")
    if leaf.kind != "random":  # drawn once the output is allocated (drawn)
        ops.prep.append(f"{v} = {v}.contiguous()")
    what = {"input": f"forward input `{leaf.ref}`", "param": f"parameter `{leaf.ref}`",
            "random": f"dropout mask `{leaf.ref}`"}[leaf.kind]
    if kind == "full":
        ops.loads.append(f"const float {v} = {v}_p[i];" if flat else f"const float {v} = {v}_row[c];")
        ops.row_setup.append(f"const {ct}* {v}_row = {v}_p + r * cols;")
        ops.docs.append(f"{v}_p: {what}, same shape as the output")
    elif kind == "scalar":
        # read once, before the loop: a load inside it may alias the output, which keeps the
        # compiler from vectorising (and from hoisting what is computed from the value)
        ops.hoisted.append(f"const float {v} = {v}_p[0];")
        ops.docs.append(f"{v}_p: {what}, one value")
    elif kind == "tail":
        ops.c_params.append(f"int64_t {v}_rows")
        ops.host_args.append(f"{v}.numel() // cols")
        ops.row_setup.append(f"const {ct}* {v}_row = {v}_p + (r % {v}_rows) * cols;")
        ops.loads.append(f"const float {v} = {v}_row[c];")
        ops.docs.append(f"{v}_p: {what}, broadcast along leading dims: row r reads its row r % {v}_rows")
    elif kind == "rows":
        ops.c_params += [f"int64_t {v}_every", f"int64_t {v}_rows"]
        ops.host_args += [f"math.prod(shape[{hi + 1}:-1])", f"{v}.numel() // cols"]
        ops.row_setup.append(f"const {ct}* {v}_row = {v}_p + ((r / {v}_every) % {v}_rows) * cols;")
        ops.loads.append(f"const float {v} = {v}_row[c];")
        ops.docs.append(f"{v}_p: {what}, broadcast over middle dims: row r reads its row (r / {v}_every) % {v}_rows")
    else:
        ops.c_params += [f"int64_t {v}_every", f"int64_t {v}_numel"]
        ops.host_args += [f"math.prod(shape[{hi + 1}:-1])", f"{v}.numel()"]
        ops.row_setup.append(f"const float {v}_value = {v}_p[(r / {v}_every) % {v}_numel];")
        ops.loads.append(f"const float {v} = {v}_value;")
        ops.docs.append(f"{v}_p: {what}, one value per run of {v}_every rows")


def _nest(ops: _Operands, body: list[str], params: dict[str, Any], flat: bool, fast: Any) -> tuple[list[str], str]:
    """The loop nest over the output, and what it walks (for the kernel's comment)."""
    sched = omp_schedule(params)
    if not flat:
        nest = [*(f"    {line}" for line in ops.hoisted),
                f"    #pragma omp parallel for {sched} if(rows * cols >= KF_PAR_MIN)",
                "    for (int64_t r = 0; r < rows; r++) {",
                *(f"        {line}" for line in ops.row_setup),
                f"        {simd_pragma(params)}",
                "        for (int64_t c = 0; c < cols; c++) {",
                *(f"            {line}" for line in body), "        }", "    }"]
        return nest, "the output as rows of its last dim, one row per OpenMP iteration"
    block = int(params["BLOCK"])
    nest = [*(f"    {line}" for line in ops.hoisted),
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
    return nest, walk


def _host(ops: _Operands, leaves: list[Expr], names: dict[int, str], kinds: dict[int, tuple[str, int]],
          scalars: list[str], out_shape: tuple[int, ...], ctx: Any, params: dict[str, Any],
          flat: bool) -> tuple[list[str], str | None]:
    """The Python wrapper that allocates the output (or writes over a donated operand) and calls
    the kernel; the donated operand's name, if any."""
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
            *(f"    {line}" for line in ops.prep),
            f"    out = {over}  # written over: dead after this stage" if over else
            f"    out = scratch.empty(shape, dtype=torch.float32, device={first}.device)", *drawn]
    if flat:
        host.append(f"    lib.fused_elementwise({', '.join([*ops.host_args, 'out', 'out.numel()', *scalars])})")
    else:
        host += ["    cols = shape[-1] if len(shape) else 1",
                 "    if out.numel() == 0:", "        return out",
                 f"    lib.fused_elementwise({', '.join([*ops.host_args, 'out', 'out.numel() // cols', 'cols', *scalars])})"]
    host.append("    return out")
    return host, over


def render(match: Any, params: dict[str, Any]) -> str:
    ctx, root, leaves, out_shape = fused_parts(match)
    # a boolean mask reaches the kernel as it is (bool*), read as 0.0 or 1.0
    require_float32(match.ctx.outputs[0].get("dtype"), *(leaf.dtype for leaf in leaves if leaf.dtype != "bool"))
    kinds = _kinds(leaves, out_shape)
    flat = all(kinds[id(leaf)][0] in ("full", "scalar") for leaf in leaves)
    writer = CWriter(ctx, {})
    names = {id(leaf): writer.name_for(leaf) for leaf in leaves}
    ops = _Operands()
    for leaf in leaves:
        _operand(ops, leaf, names[id(leaf)], *kinds[id(leaf)], flat)
        writer.values[id(leaf)] = names[id(leaf)]
    result = writer.emit(root)
    fast = _positive_path(root, leaves, kinds, names, ctx, writer, ops.loads) if flat else None
    scalars = list(writer.scalars)
    c_params = [*ops.c_params, "float* out", *(["int64_t n"] if flat else ["int64_t rows", "int64_t cols"]),
                *(f"float {s}" for s in scalars)]
    body = [*ops.loads, *writer.lines, f"out[{'i' if flat else 'r * cols + c'}] = {result};"]
    nest, walk = _nest(ops, body, params, flat, fast)
    c_fn = f"void fused_elementwise({', '.join(c_params)})"
    comment = ["/* out = " + formula(root, ctx).replace("*/", "* /") + ".", f"   Walks {walk}.",
               *(f"   {d}" for d in ops.docs), *(f"   {s}: constructor argument" for s in scalars), "*/"]
    kernel = "\n".join([*comment, c_fn + " {", *nest, "}"])
    c_source = prelude(helper_names(kernel)) + "\n\n" + INLINE + "\n\n" + kernel
    host, over = _host(ops, leaves, names, kinds, scalars, out_shape, ctx, params, flat)
    call_args = [ctx.leaf_arg(leaf, drawn=True, native_bool=True) for leaf in leaves]
    forward = [f"return fused_elementwise({', '.join([*call_args, *writer.scalars.values()])})"]
    n_ops = len([n for n in root.walk() if n.kind == "op" and n.op not in ("identity", "cast", "view")])
    title = match.kind if n_ops <= 4 else f"A chain of {n_ops} elementwise ops"
    knobs = ", ".join(f"{k}={v}" for k, v in params.items() if (flat or k != "BLOCK") and k != "donated") + \
        (f"; writes over its operand {over}, dead after it" if over else "")
    doc = (f"{title} as one fused C loop (offline engine, no LLM, backend cpu).\n\n"
           f"Parameters: {knobs}.\n")
    return module_source(doc, c_source, [c_fn], "fused_elementwise", ["\n".join(host)], ctx, forward,
                         uses_math=not flat and any(kinds[id(leaf)][0] in ("per_row", "rows") for leaf in leaves))

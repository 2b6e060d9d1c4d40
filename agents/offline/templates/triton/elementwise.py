"""Elementwise chains: any DAG of elementwise ops over same-shape tensors,
broadcast parameters and scalars, compiled into one flat Triton kernel.

The chain is not picked from a list: ``ExprWriter`` writes one Triton statement
per node of the matched graph, so every composition of the supported ops
becomes a single pass over memory.
"""

from __future__ import annotations

from typing import Any

from ...ir.expr import Expr
from ..common import (
    ExprWriter,
    NotRenderable,
    broadcast_block,
    broadcast_rows,
    doc_lines,
    dtype_of,
    helper_source,
    model_class,
    module_source,
    needs_upcast,
    wrap,
)
from ..ops import formula

PARAM_SPACE: list[dict[str, Any]] = [
    {"BLOCK": 1024, "num_warps": 4},
    {"BLOCK": 2048, "num_warps": 8},
    {"BLOCK": 512, "num_warps": 4},
    {"BLOCK": 4096, "num_warps": 8},
]


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    root: Expr = spec["root"]
    leaves: list[Expr] = spec["leaves"]
    out_shape: tuple[int, ...] = spec["out_shape"]
    nd = len(out_shape)
    block, warps = params["BLOCK"], params["num_warps"]

    writer = ExprWriter(ctx, {})
    names = {id(leaf): writer.name_for(leaf) for leaf in leaves}
    kernel_args, host_args, loads, docs, prep = [], [], [], [], []
    uses_math = False
    for leaf in leaves:
        v = names[id(leaf)]
        writer.values[id(leaf)] = v
        what = f"forward input `{leaf.ref}`" if leaf.kind == "input" else f"parameter `{leaf.ref}`"
        span = broadcast_block(tuple(leaf.shape or ()), out_shape)
        rows = broadcast_rows(tuple(leaf.shape or ()), out_shape) if span is None else None
        if span is None and rows is None:
            raise NotRenderable(f"{leaf.name}: shape {list(leaf.shape or ())} does not broadcast to {list(out_shape)}")
        lo, hi = span or rows or (0, -1)
        upcast = ".to(tl.float32)" if needs_upcast(leaf.dtype) else ""
        kernel_args.append(f"{v}_ptr")
        host_args.append(v)
        prep.append(f"{v} = {v}.contiguous()")
        if rows is not None:
            uses_math = True
            kernel_args += [f"{v}_cols", f"{v}_every", f"{v}_rows"]
            host_args += ["shape[-1]", f"math.prod(shape[{hi + 1}:-1])", f"{v}.numel() // shape[-1]"]
            loads.append(f"{v} = tl.load({v}_ptr + ((offs // {v}_cols) // {v}_every % {v}_rows) * {v}_cols "
                         f"+ offs % {v}_cols, mask=mask){upcast}")
            docs.append(f"{v}_ptr: {what}, broadcast over middle dims: row r of the output (its last dim) reads "
                        f"row (r // {v}_every) % {v}_rows")
        elif tuple(leaf.shape or ()) == out_shape:
            loads.append(f"{v} = tl.load({v}_ptr + offs, mask=mask){upcast}")
            docs.append(f"{v}_ptr: {what}, contiguous, same shape as the output")
        elif hi < 0:
            loads.append(f"{v} = tl.load({v}_ptr){upcast}")
            docs.append(f"{v}_ptr: {what}, a single value broadcast to every element")
        elif hi == nd - 1:
            kernel_args.append(f"{v}_numel")
            host_args.append(f"{v}.numel()")
            loads.append(f"{v} = tl.load({v}_ptr + offs % {v}_numel, mask=mask){upcast}")
            docs.append(f"{v}_ptr: {what}, broadcast along the leading dims: element i reads i % {v}_numel")
        else:
            uses_math = True
            kernel_args += [f"{v}_inner", f"{v}_numel"]
            host_args += [f"math.prod(shape[{hi + 1}:])", f"{v}.numel()"]
            loads.append(f"{v} = tl.load({v}_ptr + (offs // {v}_inner) % {v}_numel, mask=mask){upcast}")
            dims = f"dim {lo}" if lo == hi else f"dims {lo}..{hi}"
            docs.append(f"{v}_ptr: {what}, varies along {dims} of the output: element i reads "
                        f"(i // {v}_inner) % {v}_numel")
    result = writer.emit(root)
    scalars = writer.scalars
    for arg in scalars:
        docs.append(f"{arg}: constructor argument, passed at run time")

    what = formula(root, ctx)
    kernel = "\n".join([
        "@triton.jit",
        *wrap("def fused_elementwise_kernel", [*kernel_args, "out_ptr", "n_elements", *scalars, "BLOCK: tl.constexpr"],
              ":"),
        *("    " + line for line in doc_lines(f'"""out = {what}, one value per output element.', "    ")),
        "",
        "    Program i computes elements [i * BLOCK, (i + 1) * BLOCK) of the flattened output.",
        *("    " + line for d in docs for line in doc_lines(d, "    ")),
        "    out_ptr: the output, contiguous, n_elements values",
        "    BLOCK: elements per program, a power of two",
        '    """',
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
        "    mask = offs < n_elements",
        *(f"    {line}" for line in loads),
        *(f"    {line}" for line in writer.lines),
        f"    tl.store(out_ptr + offs, {result}, mask=mask)",
    ])
    wrapper_params = [*(f"{names[id(leaf)]}: torch.Tensor" for leaf in leaves), *scalars]
    first = names[id(leaves[0])]
    host = "\n".join([
        *wrap("def fused_elementwise", wrapper_params, " -> torch.Tensor:"),
        '    """Allocate the output and launch one program per BLOCK elements."""',
        f"    shape = {first}.shape" if len(leaves) == 1 else
        f"    shape = torch.broadcast_shapes({', '.join(names[id(leaf)] + '.shape' for leaf in leaves)})",
        *(f"    {line}" for line in prep),
        f"    out = torch.empty(shape, dtype={dtype_of(match.ctx.outputs[0].get('dtype'))}, device={first}.device)",
        "    n_elements = out.numel()",
        f"    grid = (triton.cdiv(n_elements, {block}),)",
        *wrap("fused_elementwise_kernel[grid]",
              [*host_args, "out", "n_elements", *scalars, f"BLOCK={block}", f"num_warps={warps}"], "", "    "),
        "    return out",
    ])
    call_args = [ctx.leaf_arg(leaf) for leaf in leaves]
    forward = [f"return fused_elementwise({', '.join([*call_args, *scalars.values()])})"]
    n_ops = len([n for n in root.walk() if n.kind == "op" and n.op not in ("identity", "cast", "view")])
    title = match.kind if n_ops <= 4 else f"A chain of {n_ops} elementwise ops"
    doc = "\n".join([f"{title} as one fused Triton elementwise kernel (offline engine, no LLM).", "",
                     *doc_lines(f"out = {what}"), f"Launch parameters: BLOCK={block}, num_warps={warps}.", ""])
    cls = model_class(ctx, forward, "Same constructor, parameters and forward signature as the reference's Model.")
    return module_source(doc, [helper_source(writer.helpers), kernel, host, cls], uses_math)

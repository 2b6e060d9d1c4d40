"""Elementwise chains: any DAG of elementwise ops over same-shape tensors,
broadcast parameters and scalars, compiled into one flat Triton kernel.

The chain is not picked from a list: ``ExprWriter`` writes one Triton statement
per node of the matched graph, so every composition of the supported ops
becomes a single pass over memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...ir.expr import Expr
from ..common import (
    ExprWriter,
    NotRenderable,
    Operands,
    broadcast_block,
    broadcast_rows,
    doc_lines,
    dtype_of,
    fused_parts,
    helper_source,
    model_class,
    module_source,
    needs_upcast,
    wrap,
)
from ..ops import formula
from ..spaces import param_space

PARAM_SPACE: list[dict[str, Any]] = param_space("triton", "elementwise")


@dataclass
class _Operands(Operands):
    """What each operand adds to the kernel's arguments, loads and docstring, and to the host."""

    kernel_args: list[str] = field(default_factory=list)
    uses_math: bool = False


def _operand(ops: _Operands, leaf: Expr, v: str, out_shape: tuple[int, ...]) -> None:
    """One operand ``v``: how the kernel reads it over the flat output (whole, one value,
    broadcast along leading, middle or trailing dims)."""
    nd = len(out_shape)
    what = f"forward input `{leaf.ref}`" if leaf.kind == "input" else f"parameter `{leaf.ref}`"
    span = broadcast_block(tuple(leaf.shape or ()), out_shape)
    rows = broadcast_rows(tuple(leaf.shape or ()), out_shape) if span is None else None
    if span is None and rows is None:
        raise NotRenderable(f"{leaf.name}: shape {list(leaf.shape or ())} does not broadcast to {list(out_shape)}")
    lo, hi = span or rows or (0, -1)
    upcast = ".to(tl.float32)" if needs_upcast(leaf.dtype) else ""
    ops.kernel_args.append(f"{v}_ptr")
    ops.host_args.append(v)
    ops.prep.append(f"{v} = {v}.contiguous()")
    if rows is not None:
        ops.uses_math = True
        ops.kernel_args += [f"{v}_cols", f"{v}_every", f"{v}_rows"]
        ops.host_args += ["shape[-1]", f"math.prod(shape[{hi + 1}:-1])", f"{v}.numel() // shape[-1]"]
        ops.loads.append(f"{v} = tl.load({v}_ptr + ((offs // {v}_cols) // {v}_every % {v}_rows) * {v}_cols "
                         f"+ offs % {v}_cols, mask=mask){upcast}")
        ops.docs.append(f"{v}_ptr: {what}, broadcast over middle dims: row r of the output (its last dim) reads "
                        f"row (r // {v}_every) % {v}_rows")
    elif tuple(leaf.shape or ()) == out_shape:
        ops.loads.append(f"{v} = tl.load({v}_ptr + offs, mask=mask){upcast}")
        ops.docs.append(f"{v}_ptr: {what}, contiguous, same shape as the output")
    elif hi < 0:
        ops.loads.append(f"{v} = tl.load({v}_ptr){upcast}")
        ops.docs.append(f"{v}_ptr: {what}, a single value broadcast to every element")
    elif hi == nd - 1:
        ops.kernel_args.append(f"{v}_numel")
        ops.host_args.append(f"{v}.numel()")
        ops.loads.append(f"{v} = tl.load({v}_ptr + offs % {v}_numel, mask=mask){upcast}")
        ops.docs.append(f"{v}_ptr: {what}, broadcast along the leading dims: element i reads i % {v}_numel")
    else:
        ops.uses_math = True
        ops.kernel_args += [f"{v}_inner", f"{v}_numel"]
        ops.host_args += [f"math.prod(shape[{hi + 1}:])", f"{v}.numel()"]
        ops.loads.append(f"{v} = tl.load({v}_ptr + (offs // {v}_inner) % {v}_numel, mask=mask){upcast}")
        dims = f"dim {lo}" if lo == hi else f"dims {lo}..{hi}"
        ops.docs.append(f"{v}_ptr: {what}, varies along {dims} of the output: element i reads "
                        f"(i // {v}_inner) % {v}_numel")


def render(match: Any, params: dict[str, Any]) -> str:
    ctx, root, leaves, out_shape = fused_parts(match)
    block, warps = params["BLOCK"], params["num_warps"]

    writer = ExprWriter(ctx, {})
    names = {id(leaf): writer.name_for(leaf) for leaf in leaves}
    ops = _Operands()
    for leaf in leaves:
        writer.values[id(leaf)] = names[id(leaf)]
        _operand(ops, leaf, names[id(leaf)], out_shape)
    kernel_args, host_args, loads, docs, prep = ops.kernel_args, ops.host_args, ops.loads, ops.docs, ops.prep
    uses_math = ops.uses_math
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

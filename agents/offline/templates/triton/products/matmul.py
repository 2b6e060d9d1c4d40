"""Matmul (torch.matmul / mm / bmm, F.linear, nn.Linear, x @ W.t()) with the
elementwise ops that follow it (bias, activation, scale, residual...) fused
into the epilogue of one tiled Triton kernel.

Transposed operands are read through their strides, never copied. Leading
dims of the left operand are folded into M when the right one is a matrix;
equal batch dims on both sides become the second launch axis. A vector on the
right (torch.mv) is read as a (K, 1) matrix with the narrowest tile tl.dot takes.
"""

from __future__ import annotations

from typing import Any

from ....ir.expr import Expr
from ...common import ExprWriter, dtype_of, helper_source, model_class, module_source, needs_upcast
from ...ops import formula
from ...spaces import param_space

PARAM_SPACE: list[dict[str, Any]] = param_space("triton", "matmul")

_RESERVED = {"a_ptr", "b_ptr", "a_ptrs", "b_ptrs", "pid_m", "pid_n", "num_m", "num_n", "first_m", "group_size",
             "in_group", "offs_m", "offs_n", "offs_k", "mask_m", "mask_n", "out_offs", "out_mask", "acc", "a", "b",
             "k", "batch", "M", "N", "K", "a_in", "b_in", "out_shape", "stride_ab", "stride_bb"}

MAIN_LOOP = '''    # Programs are numbered so that GROUP_M consecutive ones cover a column of output
    # tiles: they reuse the same tiles of b while those are still in L2.
    pid = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * num_n
    first_m = (pid // in_group) * GROUP_M
    group_size = tl.minimum(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % in_group) % group_size
    pid_n = (pid % in_group) // group_size

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    a_ptrs = a_ptr + batch * stride_ab + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + batch * stride_bb + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=mask_m[:, None] & (offs_k[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & mask_n[None, :], other=0.0)
        acc = tl.dot(a, b, acc{precision})
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    # epilogue, on the fp32 tile; out is contiguous (batch, M, N)
    out_offs = batch * M * N + offs_m[:, None] * N + offs_n[None, :]
    out_mask = mask_m[:, None] & mask_n[None, :]'''

_LOADS = {
    "full": ("tl.load({v}_ptr + out_offs, mask=out_mask, other=0.0)", "same shape as the output, contiguous"),
    "col": ("tl.load({v}_ptr + offs_n, mask=mask_n, other=0.0)[None, :]", "one value per output column"),
    "row": ("tl.load({v}_ptr + batch * M + offs_m, mask=mask_m, other=0.0)[:, None]", "one value per output row"),
    "scalar": ("tl.load({v}_ptr)", "a single value"),
}


def _host(spec: dict[str, Any], operands: list[str], scalars: list[str], out_dtype: str, params: dict[str, Any],
          bn: int) -> list[str]:
    """The wrapper that views a and b as (batch, M, K) and (batch, K, N) and launches the grid."""
    bm, bk, gm = params["BLOCK_M"], params["BLOCK_K"], params["GROUP_M"]
    warps, stages = params["num_warps"], params["num_stages"]
    batched = spec["batched"]
    a_name, b_name = "a_in", "b_in"
    a_view = ".transpose(-2, -1)" if spec["a_t"] else ""
    b_view = ".transpose(-2, -1)" if spec["b_t"] else ""
    host_params = [f"{a_name}: torch.Tensor", f"{b_name}: torch.Tensor",
                   *(f"{v}: torch.Tensor" for v in operands), *scalars]
    lines = [f"def fused_matmul({', '.join(host_params)}) -> torch.Tensor:",
             '    """Launch a grid of output tiles (times the batch)."""',
             f"    a = {a_name}{a_view}  # (..., M, K)",
             f"    b = {b_name}{b_view}  # ({'..., ' if batched else ''}K, N)"
             if not spec.get("vector") else f"    b = {b_name}.unsqueeze(-1)  # (K,) read as (K, 1)",
             "    out_shape = (*a.shape[:-1], b.shape[-1])" if not spec.get("vector") else
             "    out_shape = a.shape[:-1]"]
    if batched:
        lines += ["    a = a.reshape(-1, a.shape[-2], a.shape[-1])",
                  "    b = b.reshape(-1, b.shape[-2], b.shape[-1])",
                  "    batch, (M, K), N = a.shape[0], a.shape[1:], b.shape[-1]",
                  "    stride_ab, stride_bb = a.stride(0), b.stride(0)"]
    else:
        lines += ["    a = a.reshape(-1, a.shape[-1])",
                  "    batch, (M, K), N = 1, a.shape, b.shape[-1]",
                  "    stride_ab, stride_bb = 0, 0"]
    lines += [f"    {v} = {v}.contiguous()" for v in operands]
    lines += [
        f"    out = torch.empty(out_shape, dtype={out_dtype}, device=a.device)",
        f"    grid = (triton.cdiv(M, {bm}) * triton.cdiv(N, {bn}), batch)",
        "    fused_matmul_kernel[grid](",
        f"        a, b, out, {''.join(p + ', ' for p in [*operands, *scalars])}"
        "M, N, K,",
        "        stride_ab, a.stride(-2), a.stride(-1), stride_bb, b.stride(-2), b.stride(-1),",
        f"        BLOCK_M={bm}, BLOCK_N={bn}, BLOCK_K={bk}, GROUP_M={gm}, num_warps={warps}, num_stages={stages},",
        "    )",
        "    return out",
    ]
    return lines


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    root: Expr = spec["root"]
    bm, bn, bk, gm = params["BLOCK_M"], params["BLOCK_N"], params["BLOCK_K"], params["GROUP_M"]
    if spec.get("vector"):
        bn = 16  # N is 1: the smallest tile tl.dot accepts
    warps, stages = params["num_warps"], params["num_stages"]
    writer = ExprWriter(ctx, {id(spec["mm"]): "acc"}, reserved=set(_RESERVED))
    epi_leaves = [leaf for leaf in spec["leaves"] if id(leaf) in spec["kinds"]]
    names = {id(leaf): writer.name_for(leaf) for leaf in epi_leaves}
    loads, docs = [], []
    for leaf in epi_leaves:
        v = names[id(leaf)]
        writer.values[id(leaf)] = v
        load, what = _LOADS[spec["kinds"][id(leaf)]]
        loads.append(f"{v} = {load.format(v=v)}" + (".to(tl.float32)" if needs_upcast(leaf.dtype) else ""))
        docs.append(f"{v}_ptr: {'input' if leaf.kind == 'input' else 'parameter'} `{leaf.ref}`, {what}")
    result = writer.emit(root)
    scalars = writer.scalars
    docs += [f"{s}: constructor argument, passed at run time" for s in scalars]
    precision = ', input_precision="ieee"' if spec["dtype"] == "float32" else ""
    leaf_ptrs = [f"{names[id(leaf)]}_ptr" for leaf in epi_leaves]
    what = formula(root, ctx)
    kernel = "\n".join([
        "@triton.jit",
        "def fused_matmul_kernel(",
        f"    a_ptr, b_ptr, out_ptr, {''.join(p + ', ' for p in [*leaf_ptrs, *scalars])}M, N, K,",
        "    stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,",
        "    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,",
        "):",
        f'    """out = {what}, with a: (batch, M, K) and b: (batch, K, N).',
        "",
        "    Program (p, batch) computes one BLOCK_M x BLOCK_N tile of out[batch], walking K in",
        "    BLOCK_K steps with an fp32 accumulator (ieee precision for fp32 inputs), then applies the",
        "    fused epilogue to the tile before its only store.",
        "    a_ptr, b_ptr: operands, any strides (stride_ab = stride_bb = 0 when not batched)",
        *(f"    {d}" for d in docs),
        "    out_ptr: the output, contiguous",
        '    """',
        MAIN_LOOP.format(precision=precision),
        *(f"    {line}" for line in loads),
        *(f"    {line}" for line in writer.lines),
        f"    tl.store(out_ptr + out_offs, {result}, mask=out_mask)",
    ])

    lines = _host(spec, [names[id(leaf)] for leaf in epi_leaves], list(scalars),
                  dtype_of(match.ctx.outputs[0].get("dtype")), params, bn)

    call = [ctx.leaf_arg(spec["a"]), ctx.leaf_arg(spec["b"]), *(ctx.leaf_arg(leaf) for leaf in epi_leaves), *scalars.values()]
    cls = model_class(ctx, [f"return fused_matmul({', '.join(call)})"],
                      "Same constructor, parameters and forward signature as the reference's Model.")
    doc = (f"{match.kind} as one tiled Triton kernel, epilogue fused (offline engine, no LLM).\n\n"
           f"out = {what}\nLaunch parameters: BLOCK_M={bm}, BLOCK_N={bn}, BLOCK_K={bk}, GROUP_M={gm}, "
           f"num_warps={warps}, num_stages={stages}.\n")
    return module_source(doc, [helper_source(writer.helpers), kernel, "\n".join(lines), cls])

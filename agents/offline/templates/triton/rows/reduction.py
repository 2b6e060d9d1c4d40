"""Sum, mean, max, min and logsumexp over any set of dims, as a row reduction in Triton.

The reduced dims are moved last and flattened, so the kernel only ever sees a
contiguous (rows, n_cols) matrix. Each program reduces BLOCK_M rows, walking
the columns BLOCK_N at a time with a per-lane accumulator that is combined
once at the end.
"""

from __future__ import annotations

from typing import Any

from ...common import NotRenderable, dtype_of, model_class, module_source
from ...spaces import param_space

PARAM_SPACE: list[dict[str, Any]] = param_space("triton", "reduction")

# op -> (padding value, how lanes combine, how the row combines, what it computes)
OPS = {
    "sum": ("0.0", "acc + x", "tl.sum(acc, axis=1)", "the sum"),
    "mean": ("0.0", "acc + x", "tl.sum(acc, axis=1) / n_cols", "the mean"),
    "amax": ('-float("inf")', "tl.maximum(acc, x)", "tl.max(acc, axis=1)", "the maximum"),
    "amin": ('float("inf")', "tl.minimum(acc, x)", "tl.min(acc, axis=1)", "the minimum"),
}

KERNEL = '''@triton.jit
def row_{op}_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """out[r] = {what} of row r of a contiguous (n_rows, n_cols) matrix.

    x_ptr: the matrix, contiguous; out_ptr: n_rows values
    BLOCK_M: rows per program; BLOCK_N: columns per step (powers of two)
    """
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    row_start = rows.to(tl.int64)[:, None] * n_cols
    acc = tl.full((BLOCK_M, BLOCK_N), {pad}, tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols[None, :] < n_cols)
        x = tl.load(x_ptr + row_start + cols[None, :], mask=mask, other={pad}).to(tl.float32)
        acc = {combine}
    tl.store(out_ptr + rows, {finish}, mask=row_mask)
'''

KERNEL_LOGSUMEXP = '''@triton.jit
def row_logsumexp_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """out[r] = log(sum(exp(x[r, :]))) of a contiguous (n_rows, n_cols) matrix, without overflow.

    Each lane keeps a running max m and the sum s of exp(x - m), rescaled when m grows;
    the lanes are combined at the end against the row's max.
    x_ptr: the matrix, contiguous; out_ptr: n_rows values
    BLOCK_M: rows per program; BLOCK_N: columns per step (powers of two)
    """
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    row_start = rows.to(tl.int64)[:, None] * n_cols
    m = tl.full((BLOCK_M, BLOCK_N), -float("inf"), tl.float32)
    s = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols[None, :] < n_cols)
        x = tl.load(x_ptr + row_start + cols[None, :], mask=mask, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        # lanes that have only seen -inf (padding) have nothing to rescale
        s = s * tl.where(m_new == -float("inf"), 0.0, tl.exp(m - m_new)) + \\
            tl.where(x == -float("inf"), 0.0, tl.exp(x - m_new))
        m = m_new
    row_max = tl.max(m, axis=1)
    total = tl.sum(tl.where(m == -float("inf"), 0.0, s * tl.exp(m - row_max[:, None])), axis=1)
    tl.store(out_ptr + rows, row_max + tl.log(total), mask=row_mask)
'''


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    if spec.get("prologue") is not None or spec.get("epilogue") is not None:
        raise NotRenderable("pointwise ops fused around the reduction (the pipeline writes them as stages)")
    op, dims, nd, keepdim = spec["op"], tuple(spec["dims"]), spec["ndim"], spec["keepdim"]
    bm, bn, warps = params["BLOCK_M"], params["BLOCK_N"], params["num_warps"]
    kept = [d for d in range(nd) if d not in dims]
    order = kept + list(dims)
    lines = [f"def row_{op}(x: torch.Tensor) -> torch.Tensor:",
             f'    """{op} over dims {list(dims)}{" (kept as size 1)" if keepdim else ""}."""',
             "    shape = x.shape"]
    if order != list(range(nd)):
        lines.append(f"    x = x.permute({', '.join(map(str, order))})  # reduced dims last")
    if keepdim:
        out_shape = "[" + ", ".join("1" if d in dims else f"shape[{d}]" for d in range(nd)) + "]"
    else:
        out_shape = "[" + ", ".join(f"shape[{d}]" for d in kept) + ("," if len(kept) == 1 else "") + "]"
    lines += [
        "    x = x.contiguous()",
        f"    n_cols = math.prod(shape[d] for d in {list(dims)})",
        "    n_rows = x.numel() // max(n_cols, 1)",
        f"    out = torch.empty({out_shape}, dtype={dtype_of(match.ctx.outputs[0].get('dtype'))}, device=x.device)",
        f"    block_n = min(triton.next_power_of_2(n_cols), {bn})",
        f"    grid = (triton.cdiv(n_rows, {bm}),)",
        f"    row_{op}_kernel[grid](x, out, n_rows, n_cols, BLOCK_M={bm}, BLOCK_N=block_n, num_warps={warps})",
        "    return out",
    ]
    if op == "logsumexp":
        kernel = KERNEL_LOGSUMEXP
    else:
        pad, combine, finish, what = OPS[op]
        kernel = KERNEL.format(op=op, what=what, pad=pad, combine=combine, finish=finish)
    cls = model_class(ctx, [f"return row_{op}({ctx.forward_arg(spec['x'].index)})"],
                      "Same constructor and forward signature as the reference's Model.")
    doc = (f"{op} over dims {list(dims)} in Triton (offline engine, no LLM).\n\n"
           f"Launch parameters: BLOCK_M={bm}, BLOCK_N={bn}, num_warps={warps}.\n")
    return module_source(doc, [kernel, "\n".join(lines), cls], uses_math=True)

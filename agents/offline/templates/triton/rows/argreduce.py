"""argmax and argmin over one dim (or the whole tensor) in Triton, int64 indices.

The reduced dim is moved last, so the kernel sees a contiguous (n_rows, n_cols)
matrix. argmin is argmax of -x (the same first index on ties, NaN still NaN).
Each program takes BLOCK_M rows; every lane keeps its best value and the first
column holding it, replaced only on a strictly greater value or a first NaN;
the lanes are combined at the end as the smallest column among those holding
the row's maximum (a NaN when the row has one), which is torch's answer.
"""

from __future__ import annotations

from typing import Any

from ...common import model_class, module_source
from ...spaces import param_space

PARAM_SPACE: list[dict[str, Any]] = param_space("triton", "argreduce")

KERNEL = '''@triton.jit
def arg_rows_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """out[r] = the first column of the maximum of {sign}x[r, :] (the first NaN if any).

    x_ptr: a contiguous (n_rows, n_cols) matrix; out_ptr: n_rows int64 indices
    BLOCK_M: rows per program; BLOCK_N: columns per step (powers of two)
    """
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    row_start = rows.to(tl.int64)[:, None] * n_cols
    best = tl.full((BLOCK_M, BLOCK_N), -float("inf"), tl.float32)
    at = tl.zeros((BLOCK_M, BLOCK_N), tl.int64)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols[None, :] < n_cols)
        v = {sign}tl.load(x_ptr + row_start + cols[None, :], mask=mask, other=-float("inf")).to(tl.float32)
        better = mask & ((v > best) | ((v != v) & (best == best)) | ((start == 0) & (cols[None, :] < n_cols)))
        best = tl.where(better, v, best)
        at = tl.where(better, cols[None, :].to(tl.int64), at)
    has_nan = tl.max((best != best).to(tl.int32), axis=1)
    top = tl.max(tl.where(best != best, -float("inf"), best), axis=1)
    holds = tl.where(has_nan[:, None] > 0, best != best, best == top[:, None])
    first = tl.min(tl.where(holds, at, n_cols), axis=1)
    tl.store(out_ptr + rows, first, mask=row_mask)
'''


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    which, dim, keepdim = spec["which"], spec["dim"], spec["keepdim"]
    bm, bn, warps = params["BLOCK_M"], params["BLOCK_N"], params["num_warps"]
    if dim is None:
        out_shape = "[1] * x.dim()" if keepdim else "[]"
        prep = ["    rows = x.reshape(1, -1)"]
    else:
        out_shape = (f"[1 if d == {dim} else s for d, s in enumerate(x.shape)]" if keepdim else
                     f"[s for d, s in enumerate(x.shape) if d != {dim}]")
        prep = [f"    rows = x.movedim({dim}, -1).contiguous()", "    rows = rows.reshape(-1, rows.shape[-1])"]
    host = "\n".join([
        f"def arg{which}(x: torch.Tensor) -> torch.Tensor:",
        f'    """arg{which} over {"every dim" if dim is None else f"dim {dim}"}, int64 indices."""',
        f"    out = torch.empty({out_shape}, dtype=torch.int64, device=x.device)",
        "    if out.numel() == 0:", "        return out",
        *prep,
        "    rows = rows.contiguous()",
        "    n_rows, n_cols = rows.shape",
        f"    block_n = min(triton.next_power_of_2(n_cols), {bn})",
        f"    arg_rows_kernel[(triton.cdiv(n_rows, {bm}),)](rows, out, n_rows, n_cols, BLOCK_M={bm}, BLOCK_N=block_n,",
        f"                                              num_warps={warps})",
        "    return out"])
    kernel = KERNEL.format(sign="-" if which == "min" else "")
    cls = model_class(ctx, [f"return arg{which}({ctx.forward_arg(spec['x'].index)})"],
                      "Same constructor and forward signature as the reference's Model.")
    doc = (f"arg{which} over {'every dim' if dim is None else f'dim {dim}'} in Triton (offline engine, no LLM).\n\n"
           f"Launch parameters: BLOCK_M={bm}, BLOCK_N={bn}, num_warps={warps}.\n")
    return module_source(doc, [kernel, host, cls])

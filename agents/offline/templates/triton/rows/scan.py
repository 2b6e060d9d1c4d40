"""cumsum and cumprod along one dim in Triton, forward or reversed (``flip, scan, flip``).

The scanned dim is moved last, so the kernel sees a contiguous (n_rows, n_cols)
matrix. Each program scans BLOCK_M rows, BLOCK_N columns at a time: a scan of
the block (``tl.associative_scan``) combined with the carry of the blocks before,
the carry then taken from the block's last column. Reversed, the columns are
read and written from the end.
"""

from __future__ import annotations

from typing import Any

from ...common import model_class, module_source
from ...spaces import param_space

PARAM_SPACE: list[dict[str, Any]] = param_space("triton", "scan")

KERNEL = '''@triton.jit
def _combine(a, b):
    return a {op} b


@triton.jit
def scan_kernel(x_ptr, y_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """y[r, :] = the running {what} of x[r, :]{direction}, both contiguous (n_rows, n_cols).{excluded}

    BLOCK_M: rows per program; BLOCK_N: columns per step (powers of two)
    """
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    row_start = rows.to(tl.int64)[:, None] * n_cols
    carry = tl.full((BLOCK_M, 1), {init}, tl.float32)
    last = tl.arange(0, BLOCK_N)[None, :] == BLOCK_N - 1
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols[None, :] < n_cols)
        at = {at}
        x = tl.load({load}, other={init}).to(tl.float32)
        y = tl.associative_scan(x, 1, _combine) {op} carry
        tl.store(y_ptr + row_start + at[None, :], y, mask=mask)
        carry = tl.reshape(tl.sum(tl.where(last, y, 0.0), axis=1), (BLOCK_M, 1))
'''


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    combine, dim, reverse, exclusive = spec["combine"], spec["dim"], spec["reverse"], spec.get("exclusive", False)
    bm, bn, warps = params["BLOCK_M"], params["BLOCK_N"], params["num_warps"]
    op = "+" if combine == "sum" else "*"
    if exclusive and reverse:
        raise ValueError("an exclusive reversed scan is not matched")
    # exclusive: column c scans the columns before it, x shifted right by one (the first reads the identity)
    load = "x_ptr + row_start + at[None, :] - 1, mask=mask & (cols[None, :] > 0)" if exclusive \
        else "x_ptr + row_start + at[None, :], mask=mask"
    kernel = KERNEL.format(op=op, what="sum" if combine == "sum" else "product", init="0.0" if op == "+" else "1.0",
                           direction=" from the last column" if reverse else "",
                           excluded="\n\n    Exclusive: column c holds the scan of the columns before it." if exclusive else "",
                           at="n_cols - 1 - cols" if reverse else "cols", load=load)
    nd = len(spec["out_shape"])
    last = dim == nd - 1
    host = "\n".join([
        f"def cum{combine}(x: torch.Tensor) -> torch.Tensor:",
        f'    """cum{combine} along dim {dim}{", reversed" if reverse else ""}{", exclusive" if exclusive else ""}: '
        'rows of the last dim."""',
        *([] if last else [f"    x = x.movedim({dim}, -1)"]),
        "    x = x.contiguous()",
        "    out = torch.empty_like(x)",
        "    n_cols = x.shape[-1] if x.dim() else 1",
        "    n_rows = x.numel() // max(n_cols, 1)",
        "    if out.numel():",
        f"        block_n = min(triton.next_power_of_2(n_cols), {bn})",
        f"        scan_kernel[(triton.cdiv(n_rows, {bm}),)](x, out, n_rows, n_cols, BLOCK_M={bm}, BLOCK_N=block_n,",
        f"                                                num_warps={warps})",
        f"    return {'out' if last else f'out.movedim(-1, {dim})'}"])
    cls = model_class(ctx, [f"return cum{combine}({ctx.forward_arg(spec['x'].index)})"],
                      "Same constructor and forward signature as the reference's Model.")
    doc = (f"{match.kind} along dim {dim} in Triton (offline engine, no LLM).\n\n"
           f"Launch parameters: BLOCK_M={bm}, BLOCK_N={bn}, num_warps={warps}.\n")
    return module_source(doc, [kernel, host, cls])

"""``torch.triu`` / ``torch.tril`` in Triton: the last two dims read as (batch, M, N); each
program owns a BLOCK_M x BLOCK_N tile of one matrix and keeps the values on the kept
side of the diagonal, zeros elsewhere."""

from __future__ import annotations

from typing import Any

from ...common import model_class, module_source
from ...spaces import param_space

PARAM_SPACE: list[dict[str, Any]] = param_space("triton", "triangle")

KERNEL = '''@triton.jit
def triangle_kernel(x_ptr, y_ptr, M, N, diagonal, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """y[b, i, j] = x[b, i, j] where j - i {cmp} diagonal, else 0; grid (row tiles, column tiles, B)."""
    b = tl.program_id(2).to(tl.int64)
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    inside = (rows[:, None] < M) & (cols[None, :] < N)
    at = b * M * N + rows[:, None].to(tl.int64) * N + cols[None, :]
    keep = (cols[None, :] - rows[:, None]) {cmp} diagonal
    x = tl.load(x_ptr + at, mask=inside & keep, other=0.0)
    tl.store(y_ptr + at, x, mask=inside)
'''


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    bm, bn, warps = params["BLOCK_M"], params["BLOCK_N"], params["num_warps"]
    what = "triu" if spec["upper"] else "tril"
    host = "\n".join([
        f"def {what}(x: torch.Tensor, diagonal: int) -> torch.Tensor:",
        f'    """torch.{what} over the last two dims."""',
        "    x = x.contiguous()",
        "    out = torch.empty_like(x)",
        "    if out.numel():",
        "        M, N = x.shape[-2], x.shape[-1]",
        f"        grid = (triton.cdiv(M, {bm}), triton.cdiv(N, {bn}), x.numel() // (M * N))",
        f"        triangle_kernel[grid](x, out, M, N, diagonal, BLOCK_M={bm}, BLOCK_N={bn}, num_warps={warps})",
        "    return out"])
    cls = model_class(ctx, [f"return {what}({ctx.leaf_arg(spec['x'])}, {spec['diagonal']})"],
                      "Same constructor and forward signature as the reference's Model.")
    doc = (f"{match.kind} in Triton (offline engine, no LLM).\n\n"
           f"Launch parameters: BLOCK_M={bm}, BLOCK_N={bn}, num_warps={warps}.\n")
    return module_source(doc, [KERNEL.format(cmp=">=" if spec["upper"] else "<="), host, cls])

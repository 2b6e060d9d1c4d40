"""The per-row cross-entropy term in Triton: loss[i] = logsumexp(x[i, :]) - x[i, t[i]].
Each program owns BLOCK_M rows and walks the classes BLOCK_C at a time with an online
logsumexp (running max, rescaled sum); the target's logit is one gathered load per row.
A target equal to ignore_index, or outside [0, C), makes the host raise (torch leaves
ignored rows out of the mean; this kernel does not)."""

from __future__ import annotations

from typing import Any

from ...common import model_class, module_source
from ...spaces import param_space

PARAM_SPACE: list[dict[str, Any]] = param_space("triton", "cross_entropy")

KERNEL = '''@triton.jit
def xent_rows_kernel(x_ptr, t_ptr, loss_ptr, B, C, BLOCK_M: tl.constexpr, BLOCK_C: tl.constexpr):
    """loss[i] = log(sum_j exp(x[i, j])) - x[i, t[i]] over contiguous x (B, C)."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    live = rows < B
    base = rows.to(tl.int64) * C
    m = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    s = tl.zeros((BLOCK_M,), tl.float32)
    for c0 in range(0, C, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        x = tl.load(x_ptr + base[:, None] + cols[None, :], mask=live[:, None] & (cols[None, :] < C),
                    other=float("-inf")).to(tl.float32)
        mn = tl.maximum(m, tl.max(x, 1))
        s = s * tl.exp(m - mn) + tl.sum(tl.exp(x - mn[:, None]), 1)
        m = mn
    t = tl.load(t_ptr + rows, mask=live, other=0)
    picked = tl.load(x_ptr + base + t, mask=live, other=0.0).to(tl.float32)
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=live)
'''


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    bm, bc, warps = params["BLOCK_M"], params["BLOCK_C"], params["num_warps"]
    host = "\n".join([
        "def cross_entropy_rows(x: torch.Tensor, t: torch.Tensor, ignore_index: int) -> torch.Tensor:",
        '    """logsumexp(x[i]) - x[i, t[i]] per row."""',
        "    x, t = x.contiguous(), t.contiguous()",
        "    B, C = x.shape",
        "    if B and bool(((t < 0) | (t >= C)).any()):",
        '        bad = "ignore_index" if bool((t == ignore_index).any()) else "out of range"',
        '        raise ValueError(f"cross entropy: a target is {bad} (rows left out of the mean are not covered)")',
        "    out = torch.empty(B, dtype=x.dtype, device=x.device)",
        "    if B:",
        f"        block_c = min(triton.next_power_of_2(C), {bc})",
        f"        xent_rows_kernel[(triton.cdiv(B, {bm}),)](x, t, out, B, C, BLOCK_M={bm}, BLOCK_C=block_c,",
        f"                                                 num_warps={warps})",
        "    return out"])
    call = f"return cross_entropy_rows({ctx.leaf_arg(spec['x'])}, {ctx.leaf_arg(spec['t'])}, {spec['ignore_index']})"
    cls = model_class(ctx, [call], "Same constructor and forward signature as the reference's Model.")
    doc = (f"{match.kind} in Triton (offline engine, no LLM).\n\n"
           f"Launch parameters: BLOCK_M={bm}, BLOCK_C={bc}, num_warps={warps}.\n")
    return module_source(doc, [KERNEL, host, cls])

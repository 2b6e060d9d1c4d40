"""Scaled dot-product attention in Triton: fused and tiled, with an online softmax
(flash attention's recurrence), never writing the (L, S) score matrix.

Each program owns BLOCK_M query rows of one (batch, head). It walks the keys BLOCK_N at
a time: scores by ``tl.dot`` (ieee precision in fp32), the running row maximum and
denominator rescaled per block, and the output tile -- the running p @ v -- with them.
Causal attention masks key j > i (torch's ``is_causal``: top-left aligned).
ReLU attention (``relu(q k^T * scale) v``, unnormalised) walks the keys the same way with
weights ``max(score, 0)`` and no running maximum or denominator.
"""

from __future__ import annotations

from typing import Any

from ...attention_mask import checked
from ...common import model_class, module_source
from ...spaces import param_space

PARAM_SPACE: list[dict[str, Any]] = param_space("triton", "attention")

KERNEL = '''@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, L, S, E, Ev, scale, CAUSAL: tl.constexpr, RELU: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr):
    """o[b, i, :] = softmax_j(q[b, i, :] . k[b, j, :] * scale) v[b, j, :] (RELU: relu(...) v, unnormalised),
    all contiguous (B, rows, features); grid (query blocks, B). BLOCK_D / BLOCK_DV cover E / Ev whole."""
    b = tl.program_id(1).to(tl.int64)
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, BLOCK_D)
    rdv = tl.arange(0, BLOCK_DV)
    q = tl.load(q_ptr + b * L * E + rm[:, None] * E + rd[None, :], mask=(rm[:, None] < L) & (rd[None, :] < E),
                other=0.0).to(tl.float32)
    m = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_DV), tl.float32)
    for n0 in range(0, S, BLOCK_N):
        rn = n0 + tl.arange(0, BLOCK_N)
        kt = tl.load(k_ptr + b * S * E + rn[None, :] * E + rd[:, None], mask=(rn[None, :] < S) & (rd[:, None] < E),
                     other=0.0).to(tl.float32)
        s = tl.dot(q, kt{precision}) * scale
        valid = (rn[None, :] < S) & (rm[:, None] >= 0)
        if CAUSAL:
            valid = valid & (rn[None, :] <= rm[:, None])
        v = tl.load(v_ptr + b * S * Ev + rn[:, None] * Ev + rdv[None, :],
                    mask=(rn[:, None] < S) & (rdv[None, :] < Ev), other=0.0).to(tl.float32)
        if RELU:
            p = tl.where(valid, tl.where(s < 0.0, 0.0, s), 0.0)
            acc = acc + tl.dot(p, v{precision})
        else:
            s = tl.where(valid, s, float("-inf"))
            mn = tl.maximum(m, tl.max(s, 1))
            p = tl.exp(s - mn[:, None])
            corr = tl.exp(m - mn)
            l = l * corr + tl.sum(p, 1)
            acc = acc * corr[:, None] + tl.dot(p, v{precision})
            m = mn
    if not RELU:
        acc = acc / l[:, None]
    tl.store(o_ptr + b * L * Ev + rm[:, None] * Ev + rdv[None, :], acc, mask=(rm[:, None] < L) & (rdv[None, :] < Ev))
'''


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    q, k, v = spec["q"], spec["k"], spec["v"]
    bm, bn, warps = params["BLOCK_M"], params["BLOCK_N"], params["num_warps"]
    precision = ', input_precision="ieee"' if q.dtype == "float32" else ""
    relu = spec.get("weights") == "relu"
    kernel = KERNEL.format(precision=precision)
    fn = "relu_attention" if relu else "attention"
    host = "\n".join([
        f"def {fn}(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale, causal: bool) -> torch.Tensor:",
        f'    """{"relu" if relu else "softmax"}(q k^T * scale) v over the last two dims (scale None: 1 / sqrt(E))."""',
        "    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()",
        "    L, E, S, Ev = q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]",
        "    out = torch.empty(*q.shape[:-1], Ev, dtype=q.dtype, device=q.device)",
        "    if out.numel() == 0:",
        "        return out",
        "    scale = 1.0 / math.sqrt(E) if scale is None else float(scale)",
        "    batch = q.numel() // (L * E)",
        "    block_d, block_dv = max(16, triton.next_power_of_2(E)), max(16, triton.next_power_of_2(Ev))",
        f"    attention_kernel[(triton.cdiv(L, {bm}), batch)](q, k, v, out, L, S, E, Ev, scale, CAUSAL=causal,",
        f"        RELU={relu}, BLOCK_M={bm}, BLOCK_N={bn}, BLOCK_D=block_d, BLOCK_DV=block_dv, num_warps={warps})",
        "    return out"])
    call = f"return {fn}({ctx.leaf_arg(q)}, {ctx.leaf_arg(k)}, {ctx.leaf_arg(v)}, {spec['scale']!r}, " \
           f"{spec['causal']!r})"
    body, extra = checked(spec, ctx, call)
    cls = model_class(ctx, body, "Same constructor and forward signature as the reference's Model.")
    how = "ReLU weights" if relu else "an online softmax"
    doc = (f"{match.kind} in Triton, fused and tiled with {how} (offline engine, no LLM).\n\n"
           f"Launch parameters: BLOCK_M={bm}, BLOCK_N={bn}, num_warps={warps}.\n")
    return module_source(doc, [kernel, host, *extra, cls], uses_math=True)

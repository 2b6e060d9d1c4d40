"""A transpose / permute made contiguous, in Triton: a copy. The output (up to 6 dims,
padded with leading 1s) is one flat grid of BLOCK elements a program; each element's output
index is split into its six coordinates and gathered from the input at the strides the
permutation gives them."""

from __future__ import annotations

from typing import Any

from ..common import NotRenderable, gather_head, model_class, module_source
from ..spaces import param_space

PARAM_SPACE: list[dict[str, Any]] = param_space("triton", "permute")

MAX_DIMS = 6

KERNEL = '''@triton.jit
def permute_kernel(x_ptr, y_ptr, total, n1, n2, n3, n4, n5, s0, s1, s2, s3, s4, s5, BLOCK: tl.constexpr):
    """y[i] = x[at(i)]: i split into (i0..i5) over the output's sizes, at = sum(ik * sk)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    q = offs
    at = (q % n5) * s5
    q = q // n5
    at += (q % n4) * s4
    q = q // n4
    at += (q % n3) * s3
    q = q // n3
    at += (q % n2) * s2
    q = q // n2
    at += (q % n1) * s1
    q = q // n1
    at += q * s0
    tl.store(y_ptr + offs, tl.load(x_ptr + at, mask=mask), mask=mask)
'''


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    perm = tuple(match.spec["perm"])
    if len(perm) > MAX_DIMS:
        raise NotRenderable(f"a permute of {len(perm)} dims (the template copies up to {MAX_DIMS})")
    block, warps = params["BLOCK"], params["num_warps"]
    host = "\n".join([
        "def permute(x: torch.Tensor) -> torch.Tensor:",
        *gather_head(match.spec, "x.device"),
        "    if out.numel() == 0:",
        "        return out",
        f"    pad = {MAX_DIMS} - len(perm)",
        "    sizes = [1] * pad + list(out.shape)",
        "    strides = [0] * pad + [x.stride(p) * steps[p] for p in perm]",
        f"    permute_kernel[(triton.cdiv(out.numel(), {block}),)](src, out, out.numel(), *sizes[1:], *strides,",
        f"                                                        BLOCK={block}, num_warps={warps})",
        "    return out"])
    cls = model_class(ctx, [f"return permute({ctx.forward_arg(match.spec['x'].index)})"],
                      "Same constructor and forward signature as the reference's Model.")
    doc = (f"{match.kind} in Triton (offline engine, no LLM).\n\n"
           f"Launch parameters: BLOCK={block}, num_warps={warps}.\n")
    return module_source(doc, [KERNEL, host, cls])

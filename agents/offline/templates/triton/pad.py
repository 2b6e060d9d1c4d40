"""``F.pad`` with a constant in Triton: a copy. The output (up to 6 dims, padded with leading
1s) is one flat grid of BLOCK elements a program; each element's coordinates less the pads
before them read the input where they lie inside it, the fill elsewhere. A negative pad
crops."""

from __future__ import annotations

from typing import Any

from ..common import model_class, module_source, pad_settings
from ..spaces import param_space

PARAM_SPACE: list[dict[str, Any]] = param_space("triton", "pad")

MAX_DIMS = 6

KERNEL = '''@triton.jit
def pad_kernel(x_ptr, y_ptr, total, fill, o1, o2, o3, o4, o5, i0, i1, i2, i3, i4, i5, b0, b1, b2, b3, b4, b5,
               BLOCK: tl.constexpr):
    """y[c] = x[c - b] where each c_k - b_k lies in [0, i_k), else fill (x contiguous)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    q = offs
    c5 = q % o5 - b5
    q = q // o5
    c4 = q % o4 - b4
    q = q // o4
    c3 = q % o3 - b3
    q = q // o3
    c2 = q % o2 - b2
    q = q // o2
    c1 = q % o1 - b1
    c0 = q // o1 - b0
    inside = (c0 >= 0) & (c0 < i0) & (c1 >= 0) & (c1 < i1) & (c2 >= 0) & (c2 < i2) & (c3 >= 0) & (c3 < i3)
    inside = inside & (c4 >= 0) & (c4 < i4) & (c5 >= 0) & (c5 < i5)
    at = ((((c0 * i1 + c1) * i2 + c2) * i3 + c3) * i4 + c4) * i5 + c5
    v = tl.load(x_ptr + tl.where(inside, at, 0), mask=mask & inside, other=0.0)
    tl.store(y_ptr + offs, tl.where(inside, v, fill).to(v.dtype), mask=mask)
'''


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    before, after, value = pad_settings(match, MAX_DIMS)
    block, warps = params["BLOCK"], params["num_warps"]
    host = "\n".join([
        "def pad(x: torch.Tensor) -> torch.Tensor:",
        f'    """F.pad(x) by {before} before and {after} after each dim, filled with {value!r}."""',
        "    x = x.contiguous()",
        f"    before, after = {before!r}, {after!r}",
        "    out = torch.empty([n + b + a for n, b, a in zip(x.shape, before, after)], dtype=x.dtype, device=x.device)",
        "    if out.numel() == 0:",
        "        return out",
        f"    lead = {MAX_DIMS} - x.dim()",
        "    sizes, inner, pads = [1] * lead + list(out.shape), [1] * lead + list(x.shape), [0] * lead + before",
        f"    pad_kernel[(triton.cdiv(out.numel(), {block}),)](x, out, out.numel(), {value!r}, *sizes[1:], *inner,",
        f"                                                    *pads, BLOCK={block}, num_warps={warps})",
        "    return out"])
    cls = model_class(ctx, [f"return pad({ctx.forward_arg(spec['x'].index)})"],
                      "Same constructor and forward signature as the reference's Model.")
    doc = (f"{match.kind} in Triton (offline engine, no LLM).\n\n"
           f"Launch parameters: BLOCK={block}, num_warps={warps}.\n")
    return module_source(doc, [KERNEL, host, cls])

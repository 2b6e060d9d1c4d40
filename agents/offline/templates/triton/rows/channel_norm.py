"""Batch, instance and group norm in Triton, with the statistics the reference computes
in training mode (biased variance), and the optional per-channel weight and bias.

The input is (N, C, S) with S the flattened spatial dims. One program per statistic:
a (sample, group) -- a contiguous run of C/G * S values, instance norm being G = C --
or, for batch norm, a channel, whose N * S values sit in N runs of S. Three passes
over BLOCK values at a time: the mean, the centred sum of squares, the writing pass,
which applies the affine and the matched elementwise epilogue before the store.
"""

from __future__ import annotations

from typing import Any

from ...common import ExprWriter, helper_source, model_class, module_source, triton_epilogue
from ...settings import setting_expr
from ...spaces import param_space

PARAM_SPACE: list[dict[str, Any]] = param_space("triton", "channel_norm")

KERNEL_HEAD = '''@triton.jit
def _at(r, i, C, S, G, BATCH: tl.constexpr):
    """Address and channel of element i of statistic r."""
    if BATCH:
        return ((i // S) * C + r) * S + i % S, r + 0 * i
    cg = C // G
    return r * cg * S + i, (r % G) * cg + i // S
'''

KERNEL = '''@triton.jit
def channel_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, {ptrs}C, S, G, L, eps, {scalars}BATCH: tl.constexpr,
                        BLOCK: tl.constexpr):
    """y = {what} with acc = (x - mean) / sqrt(var + eps) * w[c] + b[c], over the L values of
    statistic r = program_id.

    x_ptr, y_ptr: contiguous (N, C, S); w_ptr, b_ptr: C values each
    BATCH: one statistic per channel (batch norm), else per (sample, group); L: values per statistic{docs}
    """
    r = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, L, BLOCK):
        i = start + offs
        addr, _ = _at(r, i, C, S, G, BATCH)
        acc += tl.load(x_ptr + addr, mask=i < L, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / L
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, L, BLOCK):
        i = start + offs
        addr, _ = _at(r, i, C, S, G, BATCH)
        d = tl.load(x_ptr + addr, mask=i < L, other=0.0).to(tl.float32) - mean
        acc += tl.where(i < L, d * d, 0.0)
    inv = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / L + eps)
    for start in range(0, L, BLOCK):
        i = start + offs
        mask = i < L
        addr, c = _at(r, i, C, S, G, BATCH)
        x = tl.load(x_ptr + addr, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=mask, other=1.0)
        b = tl.load(b_ptr + c, mask=mask, other=0.0)
        acc = (x - mean) * inv * w + b
{epilogue}        tl.store(y_ptr + addr, {result}, mask=mask)
'''


_RESERVED = {"acc", "x_ptr", "w_ptr", "b_ptr", "y_ptr", "C", "S", "G", "L", "eps", "r", "offs", "start", "i", "addr",
             "c", "x", "w", "b", "d", "mean", "inv", "mask", "BATCH", "BLOCK", "cg"}
_LOADS = {"scalar": "tl.load({v}_ptr)", "channel": "tl.load({v}_ptr + c, mask=mask, other=0.0)",
          "full": "tl.load({v}_ptr + addr, mask=mask, other=0.0)"}


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    kind, weight, bias = spec["kind"], spec["weight"], spec["bias"]
    block, warps = params["BLOCK"], params["num_warps"]
    writer = ExprWriter(ctx, {id(spec["norm"]): "acc"}, reserved=set(_RESERVED))
    ep = triton_epilogue(writer, spec, _LOADS, "        ")
    names, loads, docs, result = ep.names, ep.loads, ep.docs, ep.result
    scalars = list(writer.scalars)
    kernel = KERNEL.format(ptrs="".join(f"{v}_ptr, " for v in names), scalars="".join(f"{s}, " for s in scalars),
                           what=match.kind, docs="".join(f"\n    {d}" for d in docs), result=result,
                           epilogue="".join(loads) + "".join(f"        {line}\n" for line in writer.lines))
    groups = {"instance": "C", "batch": "1"}.get(kind, "groups")
    rows = "C" if kind == "batch" else f"N * {groups}"
    extra = "".join(f", {v}: torch.Tensor" for v in names) + "".join(f", {s}: float" for s in scalars)
    host = "\n".join([
        f"def {kind}_norm(x: torch.Tensor, weight, bias, groups: int, eps: float{extra}) -> torch.Tensor:",
        f'    """{kind} norm of (N, C, ...) with training-mode statistics; weight / bias may be None."""',
        "    x = x.contiguous()",
        "    out = torch.empty_like(x)",
        "    N, C, S = x.shape[0], x.shape[1], math.prod(x.shape[2:])",
        "    weight = torch.ones(C, dtype=x.dtype, device=x.device) if weight is None else weight.contiguous()",
        "    bias = torch.zeros(C, dtype=x.dtype, device=x.device) if bias is None else bias.contiguous()",
        *(f"    {v} = {v}.contiguous()" for v in names),
        f"    rows = {rows}",
        "    if out.numel():",
        f"        channel_norm_kernel[(rows,)](x, weight, bias, out, {''.join(v + ', ' for v in names)}C, S, {groups}, "
        f"x.numel() // rows, float(eps), {''.join(s + ', ' for s in scalars)}",
        f"                                     BATCH={kind == 'batch'}, BLOCK={block}, num_warps={warps})",
        "    return out"])
    w = ctx.param_access(weight.ref) if weight else "None"
    b = ctx.param_access(bias.ref) if bias else "None"
    g = setting_expr(ctx, spec["groups"]) if spec["groups"] is not None else "1"
    eps = ctx.scalar(spec["eps"])
    eps_expr = eps[1] if eps else repr(float(spec["eps"].value))
    call = [ctx.forward_arg(spec["x"].index), w, b, g, eps_expr, *(ctx.leaf_arg(leaf) for leaf in spec["epilogue"]),
            *writer.scalars.values()]
    cls = model_class(ctx, [f"return {kind}_norm({', '.join(call)})"],
                      "Same constructor and forward signature as the reference's Model.")
    doc = (f"{match.kind} (training-mode statistics) in Triton (offline engine, no LLM).\n\n"
           f"Launch parameters: BLOCK={block}, num_warps={warps}.\n")
    return module_source(doc, [helper_source(writer.helpers), KERNEL_HEAD, kernel, host, cls], uses_math=True)

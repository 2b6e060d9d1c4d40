"""What both convolution templates (Triton and C) write around their kernel: torch's
output-size rule, the head of the host function ``conv`` (output sizes, allocation, the
3-D view of absent dims), and the arguments forward passes it."""

from __future__ import annotations

from typing import Any

from ..ir.expr import Expr
from .settings import setting_expr

HEAD = '''def conv_out_size(n: int, k: int, s: int, p: int, d: int, op: int) -> int:
    """Output length of a {what} along one dim (torch's rule)."""
    {size}


def conv(x: torch.Tensor, w: torch.Tensor, {params}stride: tuple, padding: tuple, dilation: tuple,
         output_padding: tuple, groups: int{extra}) -> torch.Tensor:
    """{what} of x by w{how}, as 3-D (absent dims: size 1, window 1)."""
    nd = {nd}
    x, w = x.contiguous(), w.contiguous()
    N, C = x.shape[0], x.shape[1]
    K = {channels}
    out_sp = [conv_out_size(n, k, s, p, d, op) for n, k, s, p, d, op
              in zip(x.shape[2:], w.shape[2:], stride, padding, dilation, output_padding)]
    y = {empty}(N, K, *out_sp, dtype={dtype}, device=x.device)
    if y.numel() == 0:
        return y
    pad3 = lambda t, fill: [fill] * (3 - nd) + list(t)  # noqa: E731
'''


def head(spec: dict[str, Any], how: str, extra: str, dtype: str, empty: str = "torch.empty") -> str:
    """``conv``'s head for this match; the template appends the launch and ``return y``.
    ``extra``: the epilogue's parameters (``, name: type`` each); ``empty``: what allocates y
    (the C template's ``scratch.empty``)."""
    transposed = spec["transposed"]
    size = ("return (n - 1) * s - 2 * p + d * (k - 1) + op + 1" if transposed else
            "return (n + 2 * p - d * (k - 1) - 1) // s + 1")
    return HEAD.format(what="transposed convolution" if transposed else "convolution", size=size, how=how,
                       params="b: torch.Tensor, " if spec["bias"] is not None else "", extra=extra, nd=spec["nd"],
                       channels="w.shape[1] * groups" if transposed else "w.shape[0]", dtype=dtype,
                       empty=empty)


def call_args(ctx: Any, spec: dict[str, Any]) -> list[str]:
    """forward's arguments to ``conv`` up to the epilogue's: input, weight, bias, then the
    settings bound to the constructor's arguments."""
    def settings(items: list[Expr]) -> str:
        vals = [setting_expr(ctx, e) for e in items]
        return f"({vals[0]},)" if len(vals) == 1 else f"({', '.join(vals)})"

    bias = spec["bias"]
    return [ctx.leaf_arg(spec["x"]), ctx.leaf_arg(spec["weight"]), *([ctx.leaf_arg(bias)] if bias is not None else []),
            settings(spec["stride"]), settings(spec["padding"]), settings(spec["dilation"]),
            settings(spec["output_padding"]), setting_expr(ctx, spec["groups"])]

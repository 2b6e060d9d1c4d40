"""Layer settings as forward-time code, shared by the Triton and C templates: a
setting is the constructor argument (or module attribute) the match bound it to,
else its value (``template_context.Context.setting``)."""

from __future__ import annotations

from typing import Any

from ..ir.expr import Expr
from ..template_context import Context


def setting_expr(ctx: Context, e: Expr) -> str:
    """A layer setting in forward: the constructor argument it is bound to, else its value."""
    bound = ctx.scalar(e)
    return bound[1] if bound else str(int(e.value))


def pool_settings(ctx: Context, spec: dict[str, Any]) -> list[str]:
    """The forward-time tuples (kernel, stride, padding, dilation) of a pooling match."""
    out = []
    for k in ("kernel", "stride", "padding", "dilation"):
        items = [setting_expr(ctx, e) for e in spec[k]]
        out.append(f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})")
    return out


# The output size of a pooling window along one dim, exactly as torch computes it.
POOL_OUT_SIZE = '''def pool_out_size(n: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    """Output length of a window k, stride s, padding p, dilation d over n (torch's rule)."""
    span = n + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil else 0)) // s + 1
    if ceil and (out - 1) * s >= n + p:  # the last window must start inside the input or left padding
        out -= 1
    return out
'''

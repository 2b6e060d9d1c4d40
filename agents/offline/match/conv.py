"""The convolution matcher: a convolution or transposed convolution (1-3D, any stride,
padding, dilation, groups, output padding) of a forward input by a parameter weight,
with an optional bias, then any elementwise epilogue whose other operands are scalars,
one value per output channel, or whole tensors of the output's shape -- one kernel."""

from __future__ import annotations

from ..ir.expr import Expr
from ..template_context import Context
from .dag import epilogue_operands, float_leaf
from .layers import per_dim
from .types import FLOATS, Match, NoMatch


def conv(root: Expr, out_shape: tuple[int, ...], ctx: Context) -> Match:
    convs = [n for n in root.walk() if n.kind == "op" and n.op == "conv"]
    if len(convs) != 1:
        raise NoMatch("no convolution" if not convs else f"{len(convs)} convolutions (one per kernel here)")
    cv = convs[0]
    x, weight, bias = cv.args
    if x.kind != "input" or x.dtype not in FLOATS:
        raise NoMatch(f"the convolution input is computed ({x.op or x.kind} {x.name}), not a forward input")
    nd, transposed, raw = cv.attrs["nd"], cv.attrs["transposed"], cv.attrs["raw"]
    if len(x.shape or ()) != nd + 2:
        raise NoMatch(f"a {nd}-d convolution of a {len(x.shape or ())}-d input (a batch dim is needed)")
    if tuple(cv.shape or ()) != out_shape:
        raise NoMatch("the epilogue changes the convolution's shape")
    groups = raw.get("groups", 1)
    if not isinstance(groups, int) or groups < 1:
        raise NoMatch(f"groups {groups!r}")
    epilogue, kinds = epilogue_operands(root, cv, out_shape)
    spec = {"x": x, "weight": float_leaf(weight, "the weight"), "bias": bias if bias.kind == "param" else None,
            "nd": nd, "transposed": transposed, "groups": ctx.setting(groups, "groups", cv),
            "stride": per_dim(ctx, raw.get("stride", 1), "stride", nd, cv),
            "padding": per_dim(ctx, raw.get("padding", 0), "padding", nd, cv),
            "dilation": per_dim(ctx, raw.get("dilation", 1), "dilation", nd, cv),
            "output_padding": per_dim(ctx, raw.get("output_padding", 0), "output_padding", nd, cv),
            "conv": cv, "root": root, "consts": [], "epilogue": epilogue, "kinds": kinds, "out_shape": out_shape}
    ops = [n.op for n in root.walk() if n.kind == "op" and n.op not in ("conv", "identity", "cast")]
    kind = ("conv_transpose" if transposed else "conv") + f"{nd}d" + "".join(f" + {o}" for o in dict.fromkeys(ops))
    return Match("conv", kind, ctx, spec)


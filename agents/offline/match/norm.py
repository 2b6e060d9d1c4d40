"""The channel-norm matcher: batch, instance or group norm of a forward input, then any
elementwise epilogue (one kernel: the statistics, then a writing pass that applies the
affine and the epilogue to each value before its only store)."""

from __future__ import annotations

from ..ir.expr import Expr
from ..template_context import Context
from .dag import epilogue_operands
from .layers import forward_input
from .types import Match, NoMatch


def channel_norm(root: Expr, out_shape: tuple[int, ...], ctx: Context) -> Match:
    """Batch norm (per channel over batch and space), instance norm (per sample and channel
    over space) and group norm (per sample and group over its channels and space), with
    their biased variance and optional per-channel weight and bias; then any elementwise
    chain over scalars, per-channel values and output-shaped operands (the epilogue)."""
    norms = [n for n in root.walk() if n.kind == "op" and n.op == "channel_norm"]
    if len(norms) != 1:
        raise NoMatch("the output is not a batch, instance or group norm" if not norms else "two channel norms")
    cn = norms[0]
    if tuple(cn.shape or ()) != out_shape:
        raise NoMatch("the epilogue changes the norm's shape")
    epilogue, kinds = epilogue_operands(root, cn, out_shape)
    x = forward_input(cn.args[0], cn.attrs["kind"] + " norm")
    shape = tuple(x.shape or ())
    if len(shape) < 2:
        raise NoMatch(f"a channel norm of a {len(shape)}-d tensor")
    channels, groups = shape[1], cn.attrs["groups"]
    if channels % groups:
        raise NoMatch(f"{channels} channels in {groups} groups")
    weight, bias = (a if a.kind == "param" else None for a in cn.args[1:3])
    for p in (weight, bias):
        if p is not None and tuple(p.shape or ()) != (channels,):
            raise NoMatch(f"{p.name} is not one value per channel")
    kind = cn.attrs["kind"]
    spec = {"x": x, "kind": kind, "groups": ctx.setting(groups, "num_groups", cn) if kind == "group" else None,
            "eps": ctx.setting(cn.attrs["eps"], "eps", cn), "weight": weight, "bias": bias, "out_shape": out_shape,
            "consts": [], "norm": cn, "root": root, "epilogue": epilogue, "kinds": kinds}
    ops = [n.op for n in root.walk() if n.kind == "op" and n.op not in ("channel_norm", "identity", "cast")]
    return Match("channel_norm", kind + "_norm" + "".join(f" + {o}" for o in dict.fromkeys(ops)), ctx, spec)

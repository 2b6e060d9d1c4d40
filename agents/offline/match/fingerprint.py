"""Recognise a row operation written out by hand -- RMS norm as
``x * rsqrt(mean(x*x) + eps) * w``, layer norm from mean and variance, softmax
from exp and sum -- whatever the spelling, by evaluating the traced IR.

The IR is our own data (op names and constants), so evaluating it with torch
on random tensors is safe; the reference itself is never run here. The IR is
compared in float64 against each known formula, with each constant of the
graph tried as the epsilon.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from ..ir.expr import Expr, const
from ..ir.vocabulary import BINARY
from ..templates.ops import OPS


class CannotEvaluate(Exception):
    pass


def evaluate(root: Expr, env: dict[int, torch.Tensor]) -> torch.Tensor:
    """The value of ``root`` given values for its leaves (by node identity)."""
    memo: dict[int, Any] = dict(env)

    def value(e: Expr) -> Any:
        if id(e) in memo:
            return memo[id(e)]
        if e.kind == "const":
            return e.value
        if e.kind != "op":
            raise CannotEvaluate(f"{e.name}: no value for {e.kind} node")
        args = [value(a) for a in e.args]
        memo[id(e)] = out = _apply(e, args)
        return out

    return value(root)


def _apply(e: Expr, args: list[Any]) -> Any:
    op, x = e.op, args[0]
    if op in ("identity", "cast"):
        return x
    if op in BINARY:
        return OPS[op].torch(torch.as_tensor(x, dtype=torch.float64), args[1])
    if op in OPS:
        return OPS[op].torch(*args)
    if op == "gelu":
        return F.gelu(x, approximate=e.attrs.get("approximate", "none"))
    if op == "pow":
        return torch.pow(x, args[1])
    if op in ("clamp", "hardtanh"):
        return torch.clamp(x, args[1], args[2])
    if op in ("sum", "mean", "amax", "amin", "max", "min", "logsumexp") and e.attrs.get("values"):
        dim, keep = e.attrs.get("dim"), e.attrs.get("keepdim", False)
        if dim is None:
            raise CannotEvaluate("reduction over every dim")
        fn = {"sum": torch.sum, "mean": torch.mean, "amax": torch.amax, "amin": torch.amin,
              "max": torch.amax, "min": torch.amin, "logsumexp": torch.logsumexp}[op]
        return fn(x, dim=dim, keepdim=keep)
    raise CannotEvaluate(f"{e.name}: {op}")


@dataclass
class Recognised:
    kind: str                 # rms_norm | layer_norm | softmax | log_softmax
    x: Expr
    weight: Expr | None
    bias: Expr | None
    eps: Expr | None
    dim: int = -1             # the dim of x it runs along (normalised: 0 .. ndim - 1)


def _formula(kind: str, x: torch.Tensor, w: Any, b: Any, eps: float) -> torch.Tensor:
    if kind == "softmax":
        return torch.softmax(x, -1)
    if kind == "log_softmax":
        return torch.log_softmax(x, -1)
    if kind == "rms_norm":
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    else:
        y = F.layer_norm(x, (x.shape[-1],), eps=eps)
    y = y * w if w is not None else y
    return y + b if b is not None else y


def _reduced_dim(nodes: list[Expr], nd: int) -> int | None:
    """The one dim of an ``nd``-dim input that every reduction in the graph is over,
    else None (KernelBench level1/36 takes the mean of x ** 2 over dim 1 of a 4-D x:
    evaluated on rows, that dim would have looked like the last)."""
    found: set[int] = set()
    for n in nodes:
        if n.kind == "op" and n.op in ("sum", "mean", "amax", "amin", "max", "min", "logsumexp"):
            d = n.attrs.get("dim")
            if d is None or nd < 1:
                return None
            found |= {int(v) % nd for v in (d if isinstance(d, (list, tuple)) else [d])}
    return found.pop() if len(found) == 1 else None


def _laid(rows: torch.Tensor, nd: int, axis: int) -> torch.Tensor:
    """(6, dim) rows as an ``nd``-dim tensor: the features along ``axis``, the six rows
    along the first other dim, every other dim of size 1."""
    other = 0 if axis != 0 else nd - 1
    shape = [1] * nd
    shape[axis], shape[other] = rows.shape[1], rows.shape[0]
    return (rows if other < axis else rows.t()).reshape(shape)


def recognise(root: Expr, x: Expr, params: list[Expr]) -> Recognised | None:
    """Which known row operation ``root`` computes along one dim of ``x`` (the last, or
    any other when no parameter is involved), if any."""
    nodes = root.walk()
    if not any(n.kind == "op" and n.op in ("sum", "mean", "amax", "max") for n in nodes):
        return None
    nd = len(x.shape or ())
    axis = _reduced_dim(nodes, nd)
    if axis is None:
        return None
    dim = x.shape[axis] if x.shape else 0
    if dim < 2 or len(params) > 2 or any(tuple(p.shape or ()) != (dim,) for p in params):
        return None
    if axis != nd - 1 and params:  # a (dim,) parameter broadcasts along the last dim only
        return None
    gen = torch.Generator().manual_seed(1234)
    rows = torch.randn(3, dim, generator=gen, dtype=torch.float64)
    rows = torch.cat([rows * 3 + 0.7, rows * 1e-3])  # small rows make eps visible
    ps = [torch.rand(dim, generator=gen, dtype=torch.float64) + 0.5 for _ in params]
    env = {id(p): v for p, v in zip(params, ps, strict=True)}
    try:
        if nd == 1:
            got = torch.stack([evaluate(root, {id(x): r, **env}) for r in rows])
        else:
            got = evaluate(root, {id(x): _laid(rows, nd, axis), **env})
    except (CannotEvaluate, RuntimeError, TypeError):
        return None
    lay = (lambda t: t) if nd == 1 else (lambda t: _laid(t, nd, axis))
    if not isinstance(got, torch.Tensor) or got.shape != lay(rows).shape:
        return None
    eps_nodes = [n for n in nodes if n.kind == "const" and isinstance(n.value, float) and 0 < n.value < 0.1]
    eps_nodes.append(const(0.0))
    roles: list[tuple[Any, Any]] = [(None, None)] + [(i, None) for i in range(len(params))] + \
        [(i, j) for i, j in itertools.permutations(range(len(params)), 2)]
    for kind in ("softmax", "log_softmax", "rms_norm", "layer_norm"):
        for (wi, bi), eps in itertools.product(roles, eps_nodes if kind.endswith("norm") else [const(0.0)]):
            used = {i for i in (wi, bi) if i is not None}
            if used != set(range(len(params))) or (kind == "rms_norm" and bi is not None):
                continue
            want = _formula(kind, rows, ps[wi] if wi is not None else None, ps[bi] if bi is not None else None,
                            float(eps.value))
            if torch.allclose(got, lay(want), rtol=1e-9, atol=1e-12):
                return Recognised(kind, x, params[wi] if wi is not None else None,
                                  params[bi] if bi is not None else None, eps if kind.endswith("norm") else None,
                                  axis)
    return None

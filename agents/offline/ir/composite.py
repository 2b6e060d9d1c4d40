"""Ops the IR writes out as a chain of ops it already has: vector norms (``torch.norm``,
``torch.linalg.vector_norm``), ``F.normalize`` (x over its clamped norm), the pointwise losses (MSE, L1, smooth L1, Huber, KL
divergence, triplet margin) and cross entropy (a per-row term, then the reduction),
functional or as modules.

Each becomes elementwise ops and sum / mean reductions; the families cover them as they
are -- a norm under a division is a reduction stage and an elementwise stage of the
pipeline family, a loss an elementwise stage and a reduction. Every node built here
carries its shape, since the pipeline cuts at the reductions and names their outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .expr import Expr, Unsupported, const

Get = Callable[[int, str, Any], Any]

NORMS = {"norm", "linalg_vector_norm", "vector_norm"}
# functional loss -> (kind, position of ``reduction``, [(scalar argument, position, default)])
LOSS_FUNCS: dict[str, tuple[str, int, list[tuple[str, int, Any]]]] = {
    "mse_loss": ("mse", 4, []),
    "l1_loss": ("l1", 4, []),
    "smooth_l1_loss": ("smooth_l1", 4, [("beta", 5, 1.0)]),
    "huber_loss": ("huber", 2, [("delta", 3, 1.0)]),
    "kl_div": ("kl_div", 4, [("log_target", 5, False)]),
    "triplet_margin_loss": ("triplet", 9, [("margin", 3, 1.0), ("p", 4, 2.0), ("eps", 5, 1e-6), ("swap", 6, False)]),
}
LOSS_MODULES: dict[str, tuple[str, dict[str, Any]]] = {
    "MSELoss": ("mse", {}),
    "L1Loss": ("l1", {}),
    "SmoothL1Loss": ("smooth_l1", {"beta": 1.0}),
    "HuberLoss": ("huber", {"delta": 1.0}),
    "KLDivLoss": ("kl_div", {"log_target": False}),
    "TripletMarginLoss": ("triplet", {"margin": 1.0, "p": 2.0, "eps": 1e-6, "swap": False}),
}
LOSS_INPUTS = {"triplet": 3}  # the others take (input, target)
TINY = 1.1754944e-38  # float32's smallest normal: t * log(max(t, TINY)) is 0 at t = 0, as xlogy is


def broadcast(*shapes: Sequence[int] | None) -> tuple[int, ...] | None:
    if any(s is None for s in shapes):
        return None
    out: list[int] = []
    for dims in zip(*(([1] * (max(map(len, shapes)) - len(s))) + list(s) for s in shapes)):  # type: ignore[arg-type]
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise Unsupported(f"shapes {[list(s or ()) for s in shapes]} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


class _Writer:
    """Builds the named, shaped nodes of one op's expansion (``<node>_<step>``)."""

    def __init__(self, name: str, dtype: str | None) -> None:
        self.name, self.dtype, self.count = name, dtype, 0

    def op(self, op: str, *args: Expr, shape: tuple[int, ...] | None = None, **attrs: Any) -> Expr:
        self.count += 1
        if shape is None:
            shape = broadcast(*(a.shape if a.kind != "const" else () for a in args))
        return Expr("op", f"{self.name}_{op}{self.count}", op=op, args=args, attrs=attrs, shape=shape,
                    dtype=self.dtype)

    def reduce(self, op: str, x: Expr, dim: Any, keepdim: bool) -> Expr:
        nd = len(x.shape or ())
        dims = None if dim is None else [d % nd for d in (dim if isinstance(dim, (list, tuple)) else [dim])]
        shape = None
        if x.shape is not None:
            shape = tuple((1 if keepdim else None) if dims is None or i in dims else s for i, s in enumerate(x.shape))
            shape = tuple(s for s in shape if s is not None)
        return self.op(op, x, shape=shape, dim=dim, keepdim=keepdim and dim is not None, values=True)


def norm(x: Expr, get: Get, name: str) -> Expr:
    """``torch.norm(x, p, dim, keepdim)``: p = 2 / 'fro' (sqrt of a sum of squares), 1 or inf."""
    p, dim, keepdim = get(1, "p", "fro"), get(2, "dim", None), bool(get(3, "keepdim", False))
    if isinstance(p, str) and p != "fro" or get(4, "dtype", None) is not None:
        raise Unsupported(f"{name}: norm with p={p!r} or a dtype (2, 'fro', 1 and inf are covered)")
    if dim is not None and not isinstance(dim, (int, list, tuple)):
        raise Unsupported(f"{name}: norm over a computed dim")
    w = _Writer(name, x.dtype)
    return _norm(w, x, 2.0 if p in ("fro", None) else p, dim, keepdim, name)


def normalize(x: Expr, get: Get, name: str) -> Expr:
    """``F.normalize(x, p, dim, eps)``: ``x / max(norm_p(x, dim, keepdim=True), eps)``."""
    p, dim, eps = get(1, "p", 2.0), get(2, "dim", 1), get(3, "eps", 1e-12)
    if not isinstance(dim, int) or isinstance(dim, bool) or not isinstance(eps, (int, float)) \
            or isinstance(eps, bool) or get(4, "out", None) is not None:
        raise Unsupported(f"{name}: normalize over a computed dim or eps, or into out=")
    w = _Writer(name, x.dtype)
    return w.op("div", x, w.op("clamp", _norm(w, x, p, dim, True, name), const(float(eps)), const(None)))


def _norm(w: _Writer, x: Expr, p: Any, dim: Any, keepdim: bool, name: str) -> Expr:
    if p == 2:
        return w.op("sqrt", w.reduce("sum", w.op("square", x), dim, keepdim))
    if p == 1:
        return w.reduce("sum", w.op("abs", x), dim, keepdim)
    if p == float("inf"):
        return w.reduce("amax", w.op("abs", x), dim, keepdim)
    raise Unsupported(f"{name}: a {p}-norm (2, 'fro', 1 and inf are covered)")


def loss(kind: str, inputs: list[Expr], settings: dict[str, Any], reduction: Any, name: str) -> Expr:
    """The loss as pointwise ops, then the reduction it asks for."""
    if len(inputs) != LOSS_INPUTS.get(kind, 2):
        raise Unsupported(f"{name}: {kind} loss with {len(inputs)} tensor inputs")
    w = _Writer(name, inputs[0].dtype)
    if kind == "triplet":
        a, pos, neg = inputs
        if settings["swap"]:
            raise Unsupported(f"{name}: triplet margin loss with swap=True")
        eps = const(float(settings["eps"]))

        def dist(y: Expr) -> Expr:  # F.pairwise_distance: the norm of x - y + eps over the last dim
            return _norm(w, w.op("add", w.op("sub", a, y), eps), float(settings["p"]), -1, False, name)

        gap = w.op("add", w.op("sub", dist(pos), dist(neg)), const(float(settings["margin"])))
        point = w.op("clamp", gap, const(0.0), const(None))
    else:
        x, t = inputs
        if kind == "kl_div":
            if settings["log_target"]:
                point = w.op("mul", w.op("exp", t), w.op("sub", t, x))
            else:
                safe = w.op("clamp", t, const(TINY), const(None))
                point = w.op("mul", t, w.op("sub", w.op("log", safe), x))
        else:
            diff = w.op("sub", x, t)
            if kind == "mse":
                point = w.op("square", diff)
            elif kind == "l1" or (kind == "smooth_l1" and float(settings["beta"]) == 0):
                point = w.op("abs", diff)
            else:  # m * (|d| - m / 2), m = min(|d|, beta): 0.5 d^2 inside, |d| - beta / 2 outside
                size = float(settings["beta" if kind == "smooth_l1" else "delta"])
                ad = w.op("abs", diff)
                m = w.op("clamp", ad, const(None), const(size))
                point = w.op("mul", m, w.op("sub", ad, w.op("mul", m, const(0.5))))
                if kind == "smooth_l1":
                    point = w.op("div", point, const(size))
    if reduction == "none":
        return point
    if reduction == "mean":
        return w.reduce("mean", point, None, False)
    if reduction == "sum":
        return w.reduce("sum", point, None, False)
    if reduction == "batchmean" and kind == "kl_div" and point.shape:  # sum / batch, whatever the batch
        rows = w.reduce("sum", point, list(range(1, len(point.shape))), False) if len(point.shape) > 1 else point
        return w.reduce("mean", rows, None, False)
    raise Unsupported(f"{name}: {kind} loss with reduction={reduction!r}")


def call_loss(target: str, get: Get, tensor: Callable[[Any], Expr], name: str) -> Expr:
    kind, at, scalars = LOSS_FUNCS[target]
    count = LOSS_INPUTS.get(kind, 2)
    keys = ("anchor", "positive", "negative") if kind == "triplet" else ("input", "target")
    inputs = [tensor(get(i, keys[i], None)) for i in range(count)]
    settings = {key: get(pos, key, default) for key, pos, default in scalars}
    return loss(kind, inputs, settings, get(at, "reduction", "mean"), name)


def module_loss(cls: str, attrs: dict[str, Any], inputs: list[Expr], name: str) -> Expr:
    kind, defaults = LOSS_MODULES[cls]
    settings = {k: attrs.get(k, d) for k, d in defaults.items()}
    return loss(kind, inputs, settings, attrs.get("reduction", "mean"), name)


def cross_entropy(x: Expr, t: Expr, settings: dict[str, Any], reduction: Any, name: str) -> Expr:
    """``F.cross_entropy(x, t)`` with class indices: the per-row term logsumexp(x[i]) - x[i, t[i]]
    (op ``xent_rows``), then the reduction. Probability targets, class weights and label
    smoothing are not covered; rows whose target is ``ignore_index`` make the kernel raise
    (torch leaves them out of the mean), never a silently different value."""
    if t.dtype != "int64" or len(x.shape or ()) != 2 or len(t.shape or ()) != 1:
        raise Unsupported(f"{name}: cross entropy over {list(x.shape or ())} with {t.dtype} targets "
                          f"{list(t.shape or ())} (2-d logits and class indices are covered)")
    if settings.get("weight") is not None or float(settings.get("label_smoothing") or 0.0) != 0.0:
        raise Unsupported(f"{name}: cross entropy with class weights or label smoothing")
    w = _Writer(name, x.dtype)
    rows = w.op("xent_rows", x, t, shape=(x.shape[0],) if x.shape else None,
                ignore_index=int(settings.get("ignore_index", -100)))
    if reduction == "none":
        return rows
    if reduction in ("mean", "sum"):
        return w.reduce(reduction, rows, None, False)
    raise Unsupported(f"{name}: cross entropy with reduction={reduction!r}")


def call_cross_entropy(get: Get, tensor: Callable[[Any], Expr], name: str) -> Expr:
    x, t = tensor(get(0, "input", None)), tensor(get(1, "target", None))
    settings = {"weight": get(2, "weight", None), "ignore_index": get(4, "ignore_index", -100),
                "label_smoothing": get(7, "label_smoothing", 0.0)}
    return cross_entropy(x, t, settings, get(6, "reduction", "mean"), name)

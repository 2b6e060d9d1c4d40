"""Matchers for the layer families: pooling, arg-reductions and scans.

Each takes the output's Expr, the output shape and the Context, and returns a
Match or raises NoMatch saying why. Layer settings (kernel sizes, strides...)
become consts bound to the constructor argument holding them (Context.setting),
so a candidate follows the reference when the judge perturbs its sizes.
"""

from __future__ import annotations

from typing import Any

from ..ir.expr import Expr
from ..template_context import Context
from .types import FLOATS, Match, NoMatch


def forward_input(e: Expr, what: str) -> Expr:
    if e.kind != "input":
        raise NoMatch(f"the {what} input is computed ({e.op or e.kind} {e.name}), not a forward input")
    if e.dtype not in FLOATS:
        raise NoMatch(f"the {what} input {e.name} has dtype {e.dtype}")
    return e


def _dim(dim: Any, nd: int) -> int:
    if not isinstance(dim, int) or not -nd <= dim < max(nd, 1):
        raise NoMatch(f"dim {dim!r} is not a dim of a {nd}-d tensor")
    return dim % max(nd, 1)


def per_dim(ctx: Context, raw: Any, name: str, nd: int, layer: Expr | None = None) -> list[Expr]:
    """One bound const per spatial dim for a setting given as an int or an nd-long sequence
    (read from ``layer``'s module where Context.setting can)."""
    if isinstance(raw, bool) or raw is None:
        raise NoMatch(f"{name} is {raw!r}")
    if isinstance(raw, int):
        e = ctx.setting(raw, name, layer)
        return [e] * nd
    if isinstance(raw, (list, tuple)) and len(raw) == nd and all(isinstance(v, int) for v in raw):
        return [ctx.setting(v, name, layer, j) for j, v in enumerate(raw)]
    raise NoMatch(f"{name} {raw!r} is neither an int nor {nd} ints")


def pooling(root: Expr, out_shape: tuple[int, ...], ctx: Context) -> Match:
    if root.kind != "op" or root.op != "pool":
        raise NoMatch("the output is not a max or average pooling")
    mode, nd, raw = root.attrs["mode"], root.attrs["nd"], dict(root.attrs["raw"])
    x = forward_input(root.args[0], f"{mode} pool")
    if len(x.shape or ()) not in (nd + 1, nd + 2):
        raise NoMatch(f"a {nd}-d pooling of a {len(x.shape or ())}-d tensor")
    if raw.get("divisor_override") is not None and not isinstance(raw["divisor_override"], int):
        raise NoMatch("divisor_override is not an int")
    spec = {"x": x, "mode": mode, "nd": nd, "out_shape": out_shape,
            "kernel": per_dim(ctx, raw["kernel_size"], "kernel_size", nd, root),
            "stride": per_dim(ctx, raw["stride"], "stride", nd, root),
            "padding": per_dim(ctx, raw["padding"], "padding", nd, root),
            "dilation": per_dim(ctx, raw["dilation"], "dilation", nd, root),
            "ceil_mode": bool(raw.get("ceil_mode")), "count_include_pad": bool(raw.get("count_include_pad", True)),
            "divisor": raw.get("divisor_override")}
    return Match("pooling", f"{mode}_pool{nd}d", ctx, spec)


def concat(root: Expr, out_shape: tuple[int, ...], ctx: Context) -> Match:
    """torch.cat of forward inputs (in a pipeline, earlier stages' outputs) along one dim,
    all of one rank and dtype."""
    if root.kind != "op" or root.op != "cat":
        raise NoMatch("the output is not a torch.cat")
    xs = [forward_input(e, "cat") for e in root.args]
    nd = len(out_shape)
    if any(len(x.shape or ()) != nd for x in xs) or len({x.dtype for x in xs}) != 1:
        raise NoMatch("a cat of tensors of different ranks or dtypes")
    spec = {"xs": xs, "dim": _dim(root.attrs["dim"], nd), "out_shape": out_shape}
    return Match("concat", f"cat of {len(xs)} along dim {spec['dim']}", ctx, spec)


def pad(root: Expr, out_shape: tuple[int, ...], ctx: Context) -> Match:
    """``F.pad`` of a forward input (in a pipeline, an earlier stage's output), constant fill."""
    if root.kind != "op" or root.op != "pad":
        raise NoMatch("the output is not an F.pad")
    x = forward_input(root.args[0], "pad")
    nd, pads = len(x.shape or ()), root.attrs["pads"]
    before, after = [0] * nd, [0] * nd
    for k in range(len(pads) // 2):
        before[nd - 1 - k], after[nd - 1 - k] = pads[2 * k], pads[2 * k + 1]
    spec = {"x": x, "before": before, "after": after, "value": root.attrs["value"], "out_shape": out_shape}
    padded = sum(1 for b, a in zip(before, after) if b or a)
    return Match("pad", f"pad of {padded} dims", ctx, spec)


def arg_reduction(root: Expr, out_shape: tuple[int, ...], ctx: Context) -> Match:
    if root.kind != "op" or root.op != "argreduce":
        raise NoMatch("the output is not an argmax or argmin")
    x = forward_input(root.args[0], f"arg{root.attrs['which']}")
    nd = len(x.shape or ())
    dim = root.attrs["dim"]
    spec = {"x": x, "which": root.attrs["which"], "dim": None if dim is None else _dim(dim, nd), "ndim": nd,
            "keepdim": bool(root.attrs["keepdim"]), "out_shape": out_shape}
    return Match("argreduce", f"arg{root.attrs['which']}", ctx, spec)


def scan(root: Expr, out_shape: tuple[int, ...], ctx: Context) -> Match:
    """cumsum / cumprod of a forward input along one dim, its reverse form
    ``x.flip(d).cumsum(d).flip(d)``, or its exclusive form
    ``cat((zeros, x.narrow(d, 0, n - 1).cumsum(d)), d)`` (each value the scan of those before it)."""
    reverse = exclusive = False
    e = root
    if e.kind == "op" and e.op == "cat" and len(e.args) == 2:
        e, x = _exclusive(root, out_shape)
        exclusive = True
    elif e.kind == "op" and e.op == "flip" and e.args[0].kind == "op" and e.args[0].op == "scan":
        inner = e.args[0].args[0]
        if not (inner.kind == "op" and inner.op == "flip"):
            raise NoMatch("a flip after a scan without a flip before it")
        e, reverse = e.args[0], True
        flips = (root.attrs["dims"], inner.attrs["dims"])
        nd = len(out_shape)
        if len(flips[0]) != 1 or len(flips[1]) != 1 or \
                {_dim(flips[0][0], nd), _dim(flips[1][0], nd), _dim(e.attrs["dim"], nd)} != {_dim(flips[0][0], nd)}:
            raise NoMatch("the flips and the scan are not along one dim")
        x = forward_input(inner.args[0], "reversed scan")
    elif e.kind == "op" and e.op == "scan":
        x = forward_input(e.args[0], "scan")
    else:
        raise NoMatch("the output is not a cumsum or cumprod")
    nd = len(x.shape or ())
    spec = {"x": x, "combine": e.attrs["combine"], "dim": _dim(e.attrs["dim"], nd), "reverse": reverse,
            "exclusive": exclusive, "out_shape": out_shape}
    kind = "cum" + e.attrs["combine"] + (" (reverse)" if reverse else "") + (" (exclusive)" if exclusive else "")
    return Match("scan", kind, ctx, spec)


def _exclusive(root: Expr, out_shape: tuple[int, ...]) -> tuple[Expr, Expr]:
    """The scan and its input x of ``cat((c, scan(x.narrow(d, 0, n - 1))), d)``, where c is one
    slice along d of the scan's identity (0 for a sum, 1 for a product)."""
    fill, e = root.args
    nd = len(out_shape)
    if not (fill.kind == "op" and fill.op == "fill" and e.kind == "op" and e.op == "scan"):
        raise NoMatch("a cat that is not a constant followed by a scan")
    d = _dim(root.attrs["dim"], nd)
    identity = 0.0 if e.attrs["combine"] == "sum" else 1.0
    if fill.attrs["value"] != identity or fill.shape is None or len(fill.shape) != nd or fill.shape[d] != 1:
        raise NoMatch("the constant before the scan is not one slice of the scan's identity")
    head = e.args[0]
    if _dim(e.attrs["dim"], nd) != d or not (head.kind == "op" and head.op == "head"
                                             and _dim(head.attrs["dim"], nd) == d):
        raise NoMatch("the scan is not of a narrowed input along the cat's dim")
    x = forward_input(head.args[0], "exclusive scan")
    if x.shape is None or tuple(x.shape) != tuple(out_shape) or head.shape is None \
            or head.shape[d] != x.shape[d] - 1:
        raise NoMatch("the scanned part is not the input less its last slice")
    return e, x



def attention(root: Expr, out_shape: tuple[int, ...], ctx: Context) -> Match:
    """softmax(q k^T * scale) v (or relu(q k^T * scale) v) over forward inputs q (..., L, E),
    k (..., S, E), v (..., S, Ev), the same leading dims (no broadcasting), plain or causal."""
    if root.kind != "op" or root.op != "attention":
        raise NoMatch("the output is not a scaled dot-product attention")
    q, k, v = (forward_input(e, "attention") for e in root.args)
    qs, ks, vs = (tuple(e.shape or ()) for e in (q, k, v))
    if len(qs) < 2 or not (len(qs) == len(ks) == len(vs)) or not (qs[:-2] == ks[:-2] == vs[:-2]) \
            or qs[-1] != ks[-1] or ks[-2] != vs[-2]:
        raise NoMatch(f"attention over q {list(qs)}, k {list(ks)}, v {list(vs)}: broadcast or mismatched shapes")
    spec = {"q": q, "k": k, "v": v, "causal": root.attrs["causal"], "scale": root.attrs["scale"],
            "mask": root.attrs.get("mask"), "weights": root.attrs.get("weights", "softmax"), "out_shape": out_shape}
    kind = ("causal " if spec["causal"] else "") + ("ReLU attention" if spec["weights"] == "relu" else "attention")
    return Match("attention", kind, ctx, spec)


def triangle(root: Expr, out_shape: tuple[int, ...], ctx: Context) -> Match:
    """``torch.triu`` / ``torch.tril`` of a forward input (a stage of a pipeline: the masked
    product ``triu(A @ B)`` is a matmul stage, then this one)."""
    if root.kind != "op" or root.op != "triangle":
        raise NoMatch("the output is not a triu or tril")
    x = forward_input(root.args[0], root.attrs["upper"] and "triu" or "tril")
    if len(x.shape or ()) < 2:
        raise NoMatch(f"{root.name}: triu / tril of a {len(x.shape or ())}-d tensor")
    spec = {"x": x, "upper": root.attrs["upper"], "diagonal": root.attrs["diagonal"], "out_shape": out_shape}
    return Match("triangle", ("triu" if spec["upper"] else "tril") + f" (diagonal {spec['diagonal']})", ctx, spec)


def cross_entropy(root: Expr, out_shape: tuple[int, ...], ctx: Context) -> Match:
    """The per-row cross-entropy term logsumexp(x[i]) - x[i, t[i]] of forward inputs x (B, C)
    and int64 targets t (B,) (composite.cross_entropy writes the loss as this, then its
    reduction)."""
    if root.kind != "op" or root.op != "xent_rows":
        raise NoMatch("the output is not a per-row cross-entropy term")
    x, t = root.args
    x = forward_input(x, "cross-entropy logits")
    if t.kind != "input" or t.dtype != "int64":
        raise NoMatch(f"the cross-entropy targets {t.name} are not an int64 forward input")
    spec = {"x": x, "t": t, "ignore_index": root.attrs["ignore_index"], "out_shape": out_shape}
    return Match("cross_entropy", "cross entropy rows", ctx, spec)


def permute(root: Expr, out_shape: tuple[int, ...], ctx: Context) -> Match:
    """A transpose / permute (any chain of them) of a forward input made contiguous: the copy
    a whole model needs between its regions (attention heads split out of a projection,
    merged back before the next one); or a strided slice (``x[:, 0::2, 1::2]``), the same
    gather at the steps' strides from the starts' offset."""
    if root.kind == "op" and root.op == "gather":  # a strided slice (ir.layers.strided_slice): no permutation
        x = forward_input(root.args[0], "strided slice")
        spec = {"x": x, "perm": list(range(len(x.shape or ()))), "starts": list(root.attrs["starts"]),
                "steps": list(root.attrs["steps"]), "out_shape": out_shape}
        return Match("permute", f"strided slice, steps {tuple(root.attrs['steps'])}", ctx, spec)
    e = root
    chain: list[Expr] = []
    while e.kind == "op" and e.op in ("t", "transpose", "permute", "identity"):
        if e.op != "identity":
            chain.append(e)
        e = e.args[0]
    if not chain:
        raise NoMatch("the output is not a transpose or permute")
    x = e if e.kind == "input" else forward_input(e, "permute")
    shape = tuple(x.shape or ())
    nd = len(shape)
    perm = list(range(nd))
    for node in reversed(chain):  # the innermost first
        dims = tuple(node.attrs.get("dims") or ())
        if node.op in ("t", "transpose"):
            a, b = (_dim(d, nd) for d in (dims or (0, 1)))
            perm[a], perm[b] = perm[b], perm[a]
        else:
            if sorted(_dim(d, nd) for d in dims) != list(range(nd)):
                raise NoMatch(f"permute dims {list(dims)} of a {nd}-d tensor")
            perm = [perm[_dim(d, nd)] for d in dims]
    if tuple(shape[p] for p in perm) != tuple(out_shape):
        raise NoMatch("the permuted shape is not the output's")
    if perm == list(range(nd)):
        raise NoMatch("the permutation is the identity")
    return Match("permute", f"permute {tuple(perm)}", ctx, {"x": x, "perm": perm, "out_shape": out_shape})


def recurrent(root: Expr, out_shape: tuple[int, ...], ctx: Context) -> Match:
    """An LSTM, GRU or plain RNN (``ir.recurrent``) over a forward input, its initial state
    forward inputs or none (zeros), the tensor forward selects from its result written."""
    if root.kind != "op" or root.op != "rnn" or root.attrs["select"] not in ("output", "h_n", "c_n"):
        raise NoMatch("the output is not a recurrent layer's output or final state")
    x, h0, c0 = root.args
    x = forward_input(x, "recurrent")
    if len(x.shape or ()) != 3:
        raise NoMatch(f"a recurrent layer over a {len(x.shape or ())}-d input (batched 3-d only)")
    a = root.attrs
    state = [e if e.kind in ("const", "random") else forward_input(e, "initial state") for e in (h0, c0)]
    if any(e.kind == "const" and e.value is not None for e in state):
        raise NoMatch("a recurrent layer's initial state is a constant")
    batch = x.shape[0] if a["batch_first"] else x.shape[1]
    for e in state:
        if e.kind == "random" and (e.attrs.get("dist") != "normal" or len(e.shape or ()) != 3
                                   or e.shape[:2] != (a["layers"] * a["directions"], batch)):
            raise NoMatch(f"{e.ref}: a drawn initial state not shaped (layers x directions, batch, hidden)")
    spec = {"x": x, "h0": state[0], "c0": state[1], "select": a["select"], "cell": a["cell"], "gates": a["gates"],
            "nonlinearity": a["nonlinearity"], "layers": a["layers"], "directions": a["directions"],
            "batch_first": a["batch_first"], "weights": a["weights"], "out_shape": out_shape,
            "columns": a.get("columns"), "state_2d": bool(a.get("state_2d"))}
    kind = f"{a['cell']}{' bidirectional' if a['directions'] == 2 else ''}, {a['layers']} layer(s) -> {a['select']}"
    return Match("recurrent", kind, ctx, spec)

"""Attention written out by hand, as minGPT and its descendants write it, read as the
``attention`` op the engine has a kernel for:

    q, k, v = proj(x).split(n_embd, dim=2)                   # or .chunk(3, dim=2)
    q = q.view(B, T, H, C // H).transpose(1, 2)              # (and k, v)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))   # optional
    y = F.softmax(att, dim=-1) @ v                           # dropout(p=0) between is the identity
    y = F.relu(att) @ v                                      # or ReLU weights, unnormalised

With ReLU for softmax the weights are ``max(score, 0)`` and no row is normalised; a masked
score filled with any value <= 0 (``-inf`` as written) weighs 0, so the mask is the same
causal loop (``attrs["weights"] = "relu"``; softmax attention leaves the key out).

The pieces on their own: a part of a ``split`` / ``chunk`` (``narrow``: a view of the
projection's output, rendered by the pipeline as forward's own ``chunk``), a scale of
``1 / sqrt(size)`` of a tensor's dim (``scale_rsqrt``: the attention's default scale when
that dim is the heads' width, so it follows the sizes the judge perturbs), and a
``masked_fill`` of ``buffer[..., :T, :T] == 0``. The mask is read as causal only when
the buffer's leading dims are 1 and its slice is the scores' own (T, T); the candidate
then checks at run time that the slice it would have read is the lower triangle of ones
(``attrs["mask"]`` names the buffer), and refuses, never computes wrongly, otherwise.
"""

from __future__ import annotations

import math
from typing import Any

from .expr import Expr, Unsupported


def split(target: str, x: Expr, get: Any, name: str) -> Expr:
    """``x.split(size, dim)`` / ``x.chunk(n, dim)`` into equal parts: a tuple, indexed next."""
    if x.shape is None:
        raise Unsupported(f"{name}: {target} of a tensor of unknown shape")
    dim = get(2, "dim", 0)
    amount = get(1, "split_size_or_sections" if target == "split" else "chunks", None)
    if not isinstance(dim, int) or not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0:
        raise Unsupported(f"{name}: {target} by computed or uneven sizes")
    length = x.shape[dim]
    size = amount if target == "split" else -(-length // amount)
    if length % size:
        raise Unsupported(f"{name}: {target} of {length} into parts of {size} (uneven)")
    return Expr("meta", name, op="split", args=(x,), attrs={"dim": dim % len(x.shape), "parts": length // size,
                                                            "size": size})


def part(base: Expr, index: Any, name: str) -> Expr | None:
    """Item ``index`` of a split: a ``narrow`` of the split tensor."""
    if base.kind != "meta" or base.op != "split" or not isinstance(index, int) or isinstance(index, bool):
        return None
    parts = base.attrs["parts"]
    if not -parts <= index < parts:
        raise Unsupported(f"{name}: part {index} of a split into {parts}")
    return Expr("op", name, op="narrow", args=base.args, attrs={**base.attrs, "part": index % parts})


def size(x: Expr, dim: Any, name: str) -> Expr:
    """``x.size()`` (dim None: a tuple, indexed next) or ``x.size(d)``."""
    return Expr("meta", name, op="size", args=(x,), attrs={"dim": dim if isinstance(dim, int) else None})


def size_item(base: Expr, index: Any, name: str) -> Expr | None:
    if base.kind == "meta" and base.op == "size" and base.attrs.get("dim") is None and isinstance(index, int):
        return Expr("meta", name, op="size", args=base.args, attrs={"dim": index})
    return None


def size_arith(symbol: str, a: Expr, b: Expr, name: str) -> Expr | None:
    """Arithmetic on forward inputs' sizes and ints (``p * p * img.shape[1]``) as a ``size_expr``
    meta: a formula over the inputs (``{0}`` the first), so a reshape by it follows the sizes the
    judge passes; None when an operand is neither."""
    terms = [size_term(e) for e in (a, b)]
    if any(t is None for t in terms) or not any(e.kind == "meta" for e in (a, b)):
        return None
    return Expr("meta", name, op="size_expr", attrs={"expr": f"({terms[0]} {symbol} {terms[1]})"})


def size_term(e: Expr) -> str | None:
    if is_size(e) and e.args and e.args[0].kind == "input" and e.args[0].shape is not None:
        return f"{{{e.args[0].index}}}.shape[{e.attrs['dim'] % len(e.args[0].shape)}]"
    if e.kind == "meta" and e.op == "size_expr":
        return str(e.attrs["expr"])
    if e.kind == "const" and isinstance(e.value, int) and not isinstance(e.value, bool):
        return f"<{e.value}>"  # a number the trace computed (``p * p``): the pipeline binds it where it can
    return None


def is_size(e: Expr) -> bool:
    return e.kind == "meta" and e.op == "size" and e.attrs.get("dim") is not None


def sqrt_of(e: Expr, name: str) -> Expr | None:
    """``math.sqrt(x.size(d))``."""
    return Expr("meta", name, op="sqrt_size", args=e.args, attrs=dict(e.attrs)) if is_size(e) else None


def quotient(a: Expr, b: Expr, name: str) -> Expr | None:
    """``1.0 / math.sqrt(x.size(d))``, or a tensor divided by ``math.sqrt(x.size(d))``."""
    if b.kind == "meta" and b.op == "sqrt_size":
        if a.kind == "const" and a.value == 1:
            return Expr("meta", name, op="rsqrt_size", args=b.args, attrs=dict(b.attrs))
        if a.kind in ("op", "input", "param"):
            return _scaled(a, b, name)
    return None


def product(a: Expr, b: Expr, name: str) -> Expr | None:
    """A tensor times ``1.0 / math.sqrt(x.size(d))`` (either side)."""
    for t, s in ((a, b), (b, a)):
        if s.kind == "meta" and s.op == "rsqrt_size" and t.kind in ("op", "input", "param"):
            return _scaled(t, s, name)
    return None


def _scaled(t: Expr, s: Expr, name: str) -> Expr:
    return Expr("op", name, op="scale_rsqrt", args=(t,), attrs={"of": s.args[0], "dim": s.attrs["dim"]})


def crop(base: Expr, raw: Any, name: str, shape: tuple[int, ...] | None) -> Expr | None:
    """``buffer[:, :, :T, :T]``: a parameter or buffer cut to leading sizes (each slice from
    the start, stopping at a size or a number, or whole)."""
    if base.kind != "param" or shape is None:
        return None
    items = raw if isinstance(raw, list) else [raw]
    if not items or not all(isinstance(i, dict) and i.get("slice") is not None for i in items):
        return None
    if any(i["slice"][0] is not None or i["slice"][2] is not None for i in items):
        return None
    return Expr("op", name, op="crop", args=(base,), attrs={"stops": [i["slice"][1] for i in items]},
                shape=shape, dtype=base.dtype)


def masked_fill(x: Expr, mask: Expr, value: Any, name: str) -> Expr:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise Unsupported(f"{name}: masked_fill with a computed value")
    return Expr("op", name, op="masked_fill", args=(x, mask), attrs={"value": float(value)})


def _strip(e: Expr, ops: tuple[str, ...]) -> Expr:
    while e.kind == "op" and e.op in ops:
        e = e.args[0]
    return e


def _last_two_swapped(e: Expr) -> Expr | None:
    """The tensor ``e`` transposes over its last two dims, or None."""
    if e.kind != "op" or e.op not in ("transpose", "t", "mT") or e.shape is None:
        return None
    nd = len(e.shape)
    dims = tuple(d % nd for d in (e.attrs.get("dims") or ()) if isinstance(d, int))
    return e.args[0] if sorted(dims) == [nd - 2, nd - 1] else None


def _causal_mask(mask: Expr, scores: Expr) -> Expr | None:
    """The buffer of ``buffer[..., :T, :T] == 0`` when its slice is the scores' (T, T) and its
    leading dims are 1; None for any other mask."""
    if mask.kind != "op" or mask.op != "eq" or len(mask.args) != 2:
        return None
    cut, zero = mask.args
    if zero.kind != "const" or zero.value != 0 or cut.kind != "op" or cut.op != "crop":
        return None
    buffer = cut.args[0]
    shape, want = tuple(cut.shape or ()), tuple(scores.shape or ())
    if len(shape) < 2 or len(want) < 2 or shape[-2:] != want[-2:] or want[-2] != want[-1] \
            or any(d != 1 for d in shape[:-2]) or len(buffer.shape or ()) != len(shape):
        return None
    return buffer


def attention(p: Expr, v: Expr, name: str) -> Expr | None:
    """``softmax(scale_rsqrt(q @ k^T) [masked causally], -1) @ v`` (or ``relu(...) @ v``) as one
    ``attention`` op with the default scale; None when the product is anything else."""
    p = _strip(p, ("identity", "cast"))
    if p.kind != "op" or p.shape is None:
        return None
    if p.op == "softmax" and p.attrs.get("dim") in (-1, len(p.shape) - 1):
        weights = "softmax"
    elif p.op == "relu":
        weights = "relu"
    else:
        return None
    scores, buffer = p.args[0], None
    if scores.kind == "op" and scores.op == "masked_fill":
        buffer = _causal_mask(scores.args[1], scores)
        fill = scores.attrs["value"]
        # a masked key must weigh 0: softmax's only for -inf, ReLU's for any fill <= 0
        if buffer is None or not (fill == -math.inf if weights == "softmax" else fill <= 0):
            return None
        scores = scores.args[0]
    if scores.kind != "op" or scores.op != "scale_rsqrt" or scores.args[0].kind != "op" \
            or scores.args[0].op != "matmul":
        return None
    q, kt = scores.args[0].args
    k = _last_two_swapped(kt)
    if k is None or q.shape is None or k.shape is None or v.shape is None or len(q.shape) < 3:
        return None
    of, dim = scores.attrs["of"], scores.attrs["dim"]
    nd = len(of.shape or ())
    # the default scale is 1 / sqrt of the heads' width: the size read must be that dim
    if not nd or not (any(of is t for t in (q, k)) and dim % nd == nd - 1 or of is kt and dim % nd == nd - 2):
        return None
    attrs: dict[str, Any] = {"causal": buffer is not None, "scale": None}
    if buffer is not None:
        attrs["mask"] = buffer.ref
    if weights == "relu":
        attrs["weights"] = "relu"
    return Expr("op", name, op="attention", args=(q, k, v), attrs=attrs)

"""IR nodes for torch's transformer layers, written out as what they compute:
``nn.MultiheadAttention`` (self-attention: the three inputs one tensor),
``nn.TransformerEncoderLayer`` (post- or pre-norm, ReLU or GELU) and ``nn.TransformerEncoder``
(a stack of them, an optional final norm).

torch.fx keeps these modules whole; the analysis reports their settings
(``sandbox/runner/phases/module_attrs.py``) and their weights are in the state_dict under the
module's path. Self-attention becomes the ops a hand-written one spells (minGPT's, which the
engine already has kernels for): the packed projection ``x @ in_proj_weight^T + in_proj_bias``,
its three equal parts, each split into heads and moved to (batch, heads, length, head dim),
the ``attention`` op with the default scale, the heads moved back and merged, and the output
projection. The module's call returns ``(output, weights)``; forward's ``[0]`` takes the output
(``getitem``), the averaged weights are not written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .expr import Expr, Unsupported, const
from .operands import transposed

MODULES = ("MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder")
ACTIVATIONS = ("relu", "gelu")
Param = Callable[[str], Expr]


def module_node(cls: str, attrs: dict[str, Any], node: dict[str, Any], name: str, path: str,
                tensor: Callable[[Any], Expr], param: Param) -> Expr:
    what = f"nn.{cls} ({path})"
    args, kwargs = node["args"], node["kwargs"]
    if not args:
        raise Unsupported(f"{name}: {what} called without an input")
    x = tensor(args[0])
    if x.shape is None or len(x.shape) != 3:
        raise Unsupported(f"{name}: {what} on a tensor that is not (length, batch, features) or batch first")
    if cls == "MultiheadAttention":
        operands = [args[i] if len(args) > i else kwargs.get(k) for i, k in enumerate(("query", "key", "value"))]
        if len(set(map(str, operands))) != 1:
            raise Unsupported(f"no family for {what} with a key or value other than its query (cross-attention)")
        _no_masks(kwargs, ("key_padding_mask", "attn_mask"), ("is_causal",), what, name, args[3:5])
        out = self_attention(x, attrs, param, "", name, what)
        return Expr("meta", name, op="attention_pair", args=(out,),
                    value=f"{what}'s attention weights (the second item) are not written")
    _no_masks(kwargs, ("src_mask", "src_key_padding_mask", "mask"), ("is_causal",), what, name, args[1:3])
    if cls == "TransformerEncoderLayer":
        return encoder_layer(x, attrs, param, "", name, what)
    layers = attrs.get("layers")
    if not isinstance(layers, list) or not layers:
        raise Unsupported(f"{name}: {what} without reported layers")
    for i, layer in enumerate(layers):
        x = encoder_layer(x, layer, param, f"layers.{i}.", f"{name}_l{i}", f"{what}.layers[{i}]")
    final = attrs.get("final_norm")
    return x if final is None else layer_norm(x, final, param, "norm.", f"{name}_norm", what)


def getitem(base: Expr, index: Any, name: str) -> Expr | None:
    """``attn(x, x, x)[0]``: the output; the weights (``[1]``) say why they are not written."""
    if base.kind != "meta" or base.op != "attention_pair":
        return None
    if index == 0:
        return base.args[0]
    raise Unsupported(f"{name}: {base.value}")


def _no_masks(kwargs: dict[str, Any], masks: tuple[str, ...], flags: tuple[str, ...], what: str, name: str,
              positional: list[Any]) -> None:
    if any(kwargs.get(k) is not None for k in masks) or any(a is not None for a in positional) \
            or any(kwargs.get(k) for k in flags):
        raise Unsupported(f"no family for {what} with a mask or is_causal (unmasked self-attention is covered)")


def _linear(x: Expr, param: Param, weight: str, bias: str, name: str, what: str) -> Expr:
    w, b = param(weight), param(bias)
    if w.kind != "param" or w.shape is None or len(w.shape) != 2:
        raise Unsupported(f"{name}: {what}: {weight} is not in the state_dict")
    shape = (*(x.shape or ())[:-1], w.shape[0])
    mm = Expr("op", f"{name}_mm", op="matmul", args=(x, transposed(w)), shape=shape, dtype=x.dtype)
    return mm if b.kind == "const" else Expr("op", name, op="add", args=(mm, b), shape=shape, dtype=x.dtype)


def self_attention(x: Expr, attrs: dict[str, Any], param: Param, prefix: str, name: str, what: str) -> Expr:
    heads, batch_first = attrs.get("num_heads"), attrs.get("batch_first")
    if not isinstance(heads, int) or heads <= 0 or not isinstance(batch_first, bool):
        raise Unsupported(f"{name}: {what} without reported heads")
    if not attrs.get("packed", False) or attrs.get("bias_kv") or attrs.get("add_zero_attn"):
        raise Unsupported(f"no family for {what} with separate key / value sizes, bias_k / bias_v or add_zero_attn")
    if attrs.get("dropout") and attrs.get("training", True):
        raise Unsupported(f"no family for {what} with attention dropout in training mode")
    d0, d1, width = x.shape or (0, 0, 0)
    if width % heads:
        raise Unsupported(f"{name}: {what}: {width} features over {heads} heads")
    qkv = _linear(x, param, f"{prefix}in_proj_weight", f"{prefix}in_proj_bias", f"{name}_qkv", what)
    # (length, batch) or (batch, length) -> (batch, heads, length, head dim), and back
    into = (0, 2, 1, 3) if batch_first else (1, 2, 0, 3)
    back = (0, 2, 1, 3) if batch_first else (2, 0, 1, 3)
    split = (d0, d1, heads, width // heads)
    moved = tuple(split[d] for d in into)
    parts = []
    for k, part in enumerate("qkv"):
        one = Expr("op", f"{name}_{part}", op="narrow", args=(qkv,), attrs={"dim": 2, "parts": 3, "size": width,
                                                                             "part": k},
                   shape=(d0, d1, width), dtype=x.dtype)
        heads_of = Expr("op", f"{name}_{part}_heads", op="view", args=(one,), shape=split, dtype=x.dtype)
        parts.append(Expr("op", f"{name}_{part}_moved", op="permute", args=(heads_of,), attrs={"dims": into},
                          shape=moved, dtype=x.dtype))
    att = Expr("op", f"{name}_att", op="attention", args=tuple(parts), attrs={"causal": False, "scale": None},
               shape=moved, dtype=x.dtype)
    merged = Expr("op", f"{name}_back", op="permute", args=(att,), attrs={"dims": back}, shape=split, dtype=x.dtype)
    flat = Expr("op", f"{name}_merged", op="view", args=(merged,), shape=(d0, d1, width), dtype=x.dtype)
    return _linear(flat, param, f"{prefix}out_proj.weight", f"{prefix}out_proj.bias", name, what)


def layer_norm(x: Expr, norm: Any, param: Param, prefix: str, name: str, what: str) -> Expr:
    if not isinstance(norm, dict) or norm.get("cls") != "LayerNorm" or not isinstance(norm.get("eps"), float):
        raise Unsupported(f"no family for {what} with a norm other than nn.LayerNorm")
    return Expr("op", name, op="layer_norm", args=(x, param(f"{prefix}weight"), param(f"{prefix}bias"),
                                                   const(norm["eps"])),
                attrs={"ndims": 1}, shape=x.shape, dtype=x.dtype)


def _add(a: Expr, b: Expr, name: str) -> Expr:
    return Expr("op", name, op="add", args=(a, b), shape=a.shape, dtype=a.dtype)


def encoder_layer(x: Expr, attrs: dict[str, Any], param: Param, prefix: str, name: str, what: str) -> Expr:
    """post-norm: ``n1(x + sa(x))``, then ``n2(h + ff(h))``; pre-norm: ``x + sa(n1(x))``, then
    ``h + ff(n2(h))``; ``ff(h) = linear2(act(linear1(h)))``."""
    act = attrs.get("activation") or {}
    if act.get("name") not in ACTIVATIONS:
        raise Unsupported(f"no family for {what} with activation {act.get('name')!r} (relu and gelu are covered)")
    if attrs.get("training", True) and any(attrs.get("dropouts") or [1.0]):
        raise Unsupported(f"no family for {what} with dropout in training mode")
    norms = attrs.get("norms") or [None, None]

    def attend(h: Expr) -> Expr:
        return self_attention(h, attrs.get("attention") or {}, param, f"{prefix}self_attn.", f"{name}_sa", what)

    def feed(h: Expr) -> Expr:
        up = _linear(h, param, f"{prefix}linear1.weight", f"{prefix}linear1.bias", f"{name}_up", what)
        mid = Expr("op", f"{name}_act", op=act["name"], args=(up,), shape=up.shape, dtype=up.dtype,
                   attrs={"approximate": act.get("approximate", "none")} if act["name"] == "gelu" else {})
        return _linear(mid, param, f"{prefix}linear2.weight", f"{prefix}linear2.bias", f"{name}_down", what)

    def norm(h: Expr, k: int) -> Expr:
        return layer_norm(h, norms[k], param, f"{prefix}norm{k + 1}.", f"{name}_n{k + 1}", what)

    if attrs.get("norm_first"):
        h = _add(x, attend(norm(x, 0)), f"{name}_r1")
        return _add(h, feed(norm(h, 1)), f"{name}_r2")
    h = norm(_add(x, attend(x), f"{name}_r1"), 0)
    return norm(_add(h, feed(h), f"{name}_r2"), 1)

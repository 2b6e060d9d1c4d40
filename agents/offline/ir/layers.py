"""IR nodes for the layer ops past the elementwise / matmul / row-op core: pooling
(max and average, 1-3D, module or functional), adaptive pooling to one value per
channel (a mean or max over the spatial dims), arg-reductions and scans.

``ir.build`` calls ``module_node`` for an ``nn.Module`` call and ``call_node`` for a
function or method call; both return None for what they do not know. Each layer
node keeps its settings as plain values in ``attrs["raw"]`` (what the reference's
module or call held), so the matcher can bind them to constructor arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .expr import Expr, Unsupported, const

Get = Callable[[int, str, Any], Any]  # (position, keyword, default) -> the call's argument

POOL_MODULES = {f"{m}Pool{n}d": (m.lower(), n) for m in ("Max", "Avg") for n in (1, 2, 3)}
POOL_FUNCS = {f"{m}_pool{n}d": (m, n) for m in ("max", "avg") for n in (1, 2, 3)}
ADAPTIVE = {f"Adaptive{m}Pool{n}d": (m.lower(), n) for m in ("Max", "Avg") for n in (1, 2, 3)} | \
    {f"adaptive_{m}_pool{n}d": (m, n) for m in ("max", "avg") for n in (1, 2, 3)}
# functional settings after the input, in torch's order, with defaults
_MAX_ARGS = [("kernel_size", None), ("stride", None), ("padding", 0), ("dilation", 1), ("ceil_mode", False),
             ("return_indices", False)]
_AVG_ARGS = [("kernel_size", None), ("stride", None), ("padding", 0), ("ceil_mode", False),
             ("count_include_pad", True), ("divisor_override", None)]
CHANNEL_NORMS = {**{f"BatchNorm{n}d": "batch" for n in (1, 2, 3)}, **{f"InstanceNorm{n}d": "instance" for n in (1, 2, 3)},
                 "GroupNorm": "group"}
CONV_MODULES = {f"{t}{n}d": (t == "ConvTranspose", n) for t in ("Conv", "ConvTranspose") for n in (1, 2, 3)}
CONV_FUNCS = {f"{t}{n}d": (t == "conv_transpose", n) for t in ("conv", "conv_transpose") for n in (1, 2, 3)}
# functional settings after (input, weight, bias), in torch's order, with defaults
_CONV_ARGS = [("stride", 1), ("padding", 0), ("dilation", 1), ("groups", 1)]
_CONVT_ARGS = [("stride", 1), ("padding", 0), ("output_padding", 0), ("groups", 1), ("dilation", 1)]
SCANS = {"cumsum": "sum", "cumprod": "prod"}
ARG_REDUCTIONS = {"argmax": "max", "argmin": "min"}


def module_node(cls: str, attrs: dict[str, Any], x: Expr, name: str, path: str,
                param: Callable[[str], Expr]) -> Expr | None:
    if cls in CONV_MODULES:
        transposed, nd = CONV_MODULES[cls]
        if attrs.get("padding_mode", "zeros") != "zeros":
            raise Unsupported(f"no family for nn.{cls} ({path}) with padding_mode={attrs.get('padding_mode')!r}")
        raw = {k: attrs.get(k, d) for k, d in (_CONVT_ARGS if transposed else _CONV_ARGS)}
        weight = param("weight")
        if weight.kind != "param":
            raise Unsupported(f"{name}: {path}.weight is not in the state_dict")
        node = conv(transposed, nd, x, weight, param("bias"), name, raw, f"nn.{cls} ({path})")
        return _from_module(node, path, attrs)
    if cls in CHANNEL_NORMS:
        return _from_module(channel_norm(CHANNEL_NORMS[cls], attrs, x, name, f"nn.{cls} ({path})", param),
                            path, attrs)
    if cls in POOL_MODULES:
        mode, nd = POOL_MODULES[cls]
        defaults = dict(_MAX_ARGS if mode == "max" else _AVG_ARGS)
        node = pool(mode, nd, x, name, {k: attrs.get(k, d) for k, d in defaults.items()}, f"nn.{cls} ({path})")
        return _from_module(node, path, attrs)
    if cls in ADAPTIVE:
        mode, nd = ADAPTIVE[cls]
        return adaptive(mode, nd, x, name, attrs.get("output_size"), f"nn.{cls} ({path})")
    return None


def _from_module(node: Expr, path: str, attrs: dict[str, Any]) -> Expr:
    """Mark a layer node with the module it came from and the settings that module holds as
    plain numbers (the same values as ``raw``): a candidate that builds the reference's
    modules reads them at run time (``self.conv.groups``), at whatever size it was built."""
    if node.kind != "op" or node.op not in ("conv", "pool", "channel_norm"):
        return node  # an eval-mode norm became a pointwise chain over its buffers
    raw = node.attrs["raw"] if "raw" in node.attrs else \
        {"eps": node.attrs.get("eps"), "num_groups": node.attrs.get("groups")}  # a channel norm
    keys = {k for k, v in attrs.items() if k in raw and raw[k] == v and _number_or_numbers(v)}
    node.attrs.update(module=path, module_keys=frozenset(keys))
    return node


def _number_or_numbers(v: Any) -> bool:
    def num(x: Any) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool)
    return num(v) or (isinstance(v, (list, tuple)) and bool(v) and all(num(x) for x in v))


def call_node(target: str, get: Get, x: Expr, name: str, tensor: Callable[[Any], Expr] | None = None
              ) -> Expr | None:
    """``tensor`` resolves an argument naming another node (a weight passed to F.conv2d)."""
    if target in CONV_FUNCS and tensor is not None:
        transposed, nd = CONV_FUNCS[target]
        weight, bias = tensor(get(1, "weight", None)), tensor(get(2, "bias", None))
        if weight.kind != "param" or bias.kind not in ("param", "const"):
            raise Unsupported(f"{name}: {target} with a computed weight or bias (only parameters are covered)")
        spec = _CONVT_ARGS if transposed else _CONV_ARGS
        raw = {k: get(i + 3, k, d) for i, (k, d) in enumerate(spec)}
        return conv(transposed, nd, x, weight, bias, name, raw, target)
    if target == "scaled_dot_product_attention" and tensor is not None:
        k, v = tensor(get(1, "key", None)), tensor(get(2, "value", None))
        if get(3, "attn_mask", None) is not None or get(4, "dropout_p", 0.0) not in (0, 0.0) \
                or get(7, "enable_gqa", False):
            raise Unsupported(f"{name}: attention with a mask, dropout or grouped-query heads (plain and causal "
                              "attention are covered)")
        causal, scale = get(5, "is_causal", False), get(6, "scale", None)
        if not isinstance(causal, bool) or not (scale is None or isinstance(scale, (int, float))):
            raise Unsupported(f"{name}: attention with a computed is_causal or scale")
        return Expr("op", name, op="attention", args=(x, k, v), attrs={"causal": causal, "scale": scale})
    if target in POOL_FUNCS:
        mode, nd = POOL_FUNCS[target]
        spec = _MAX_ARGS if mode == "max" else _AVG_ARGS
        return pool(mode, nd, x, name, {k: get(i + 1, k, d) for i, (k, d) in enumerate(spec)}, target)
    if target in ADAPTIVE:
        mode, nd = ADAPTIVE[target]
        return adaptive(mode, nd, x, name, get(1, "output_size", None), target)
    if target in SCANS:
        dim = get(1, "dim", None)
        if not isinstance(dim, int):
            raise Unsupported(f"{name}: {target} over a computed dim")
        if get(2, "dtype", None) is not None:
            raise Unsupported(f"{name}: {target} with a dtype argument")
        return Expr("op", name, op="scan", args=(x,), attrs={"combine": SCANS[target], "dim": dim})
    if target in ARG_REDUCTIONS:
        dim = get(1, "dim", None)
        if dim is not None and not isinstance(dim, int):
            raise Unsupported(f"{name}: {target} over a computed dim")
        return Expr("op", name, op="argreduce", args=(x,),
                    attrs={"which": ARG_REDUCTIONS[target], "dim": dim, "keepdim": bool(get(2, "keepdim", False))})
    if target in ("triu", "tril"):
        diagonal = get(1, "diagonal", 0)
        if not isinstance(diagonal, int) or isinstance(diagonal, bool):
            raise Unsupported(f"{name}: {target} with a computed diagonal")
        return Expr("op", name, op="triangle", args=(x,), attrs={"upper": target == "triu", "diagonal": diagonal})
    if target == "flip":
        dims = get(1, "dims", None)
        dims = [dims] if isinstance(dims, int) else dims
        if not isinstance(dims, (list, tuple)) or not all(isinstance(d, int) for d in dims):
            raise Unsupported(f"{name}: flip over computed dims")
        return Expr("op", name, op="flip", args=(x,), attrs={"dims": tuple(dims)})
    return _slicing(target, get, x, name)


def _slicing(target: str, get: Get, x: Expr, name: str) -> Expr | None:
    """``x.narrow(d, 0, n)`` (its length is the node's shape), ``x.select(d, i)`` and
    ``zeros_like`` / ``ones_like`` (a constant of the node's shape: its operand only gives
    the shape): the pieces of an exclusive scan written as ``cat((zeros, cumsum(x[:n-1])))``."""
    if target == "narrow":
        dim, start = get(1, "dim", None), get(2, "start", None)
        if not isinstance(dim, int) or isinstance(dim, bool) or start != 0 or isinstance(start, bool):
            raise Unsupported(f"{name}: narrow along a computed dim or from a start other than 0")
        return Expr("op", name, op="head", args=(x,), attrs={"dim": dim})
    if target == "select":
        dim, index = get(1, "dim", None), get(2, "index", None)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (dim, index)) or x.shape is None:
            raise Unsupported(f"{name}: select along a computed dim or at a computed index")
        return Expr("op", name, op="select", args=(x,), attrs={"index": (None,) * (dim % len(x.shape)) + (index,)})
    if target in ("zeros_like", "ones_like"):
        if get(1, "dtype", None) is not None:
            raise Unsupported(f"{name}: {target} with a dtype argument")
        return Expr("op", name, op="fill", attrs={"value": 0.0 if target == "zeros_like" else 1.0})
    return None


def conv(transposed: bool, nd: int, x: Expr, weight: Expr, bias: Expr, name: str, raw: dict[str, Any],
         what: str) -> Expr:
    """A convolution (or transposed one) with its settings as plain values in attrs["raw"]."""
    for key, value in raw.items():
        if isinstance(value, str) and not (key == "padding" and value in ("valid", "same")):
            raise Unsupported(f"{name}: {what} with a computed {key}")
    if raw.get("padding") == "valid":
        raw["padding"] = 0
    if raw.get("padding") == "same":
        raise Unsupported(f"no family for {what} with padding='same'")
    if bias.kind == "const" and bias.value is not None:
        raise Unsupported(f"{name}: {what} with a constant bias")
    return Expr("op", name, op="conv", args=(x, weight, bias), attrs={"nd": nd, "transposed": transposed, "raw": raw})


def pool(mode: str, nd: int, x: Expr, name: str, raw: dict[str, Any], what: str) -> Expr:
    if raw.get("return_indices"):
        raise Unsupported(f"no family for {what} with return_indices (two outputs)")
    if raw.get("kernel_size") is None:
        raise Unsupported(f"{name}: {what} without a kernel size")
    for key, value in raw.items():
        if isinstance(value, str):
            raise Unsupported(f"{name}: {what} with a computed {key}")
    if raw.get("stride") in (None, [], ()):
        raw["stride"] = raw["kernel_size"]
    if mode == "avg":
        raw["dilation"] = 1
    return Expr("op", name, op="pool", args=(x,), attrs={"mode": mode, "nd": nd, "raw": raw})


def adaptive(mode: str, nd: int, x: Expr, name: str, size: Any, what: str) -> Expr:
    """To one value per channel: a mean (avg) or max over the last ``nd`` dims, kept as size 1."""
    sizes = size if isinstance(size, (list, tuple)) else [size] * nd
    if list(sizes) != [1] * nd:
        raise Unsupported(f"no family for {what} to output size {size} (only to 1)")
    dims = list(range(-nd, 0))
    return Expr("op", name, op="mean" if mode == "avg" else "amax", args=(x,),
                attrs={"dim": dims, "keepdim": True, "values": True})


def channel_norm(kind: str, attrs: dict[str, Any], x: Expr, name: str, what: str,
                 param: Callable[[str], Expr]) -> Expr:
    """Batch, instance or group norm with the statistics the module computes in its mode:
    batch statistics in training mode (or without running stats), else the running ones."""
    running = kind != "group" and bool(attrs.get("track_running_stats")) and not attrs.get("training", True)
    eps = attrs.get("eps")
    if not isinstance(eps, float):
        raise Unsupported(f"{name}: {what} without a reported eps")
    if running:
        return _running_norm(x, eps, name, what, param)
    groups = attrs.get("num_groups") if kind == "group" else 1
    if not isinstance(groups, int):
        raise Unsupported(f"{name}: {what} without a reported num_groups")
    return Expr("op", name, op="channel_norm", args=(x, param("weight"), param("bias")),
                attrs={"kind": kind, "groups": groups, "eps": eps})


def _per_channel(leaf: Expr, nd: int) -> Expr:
    """A per-channel vector (C,) read as (1, C, 1, ...) to broadcast over an nd-dim input."""
    return Expr(leaf.kind, leaf.name, shape=(1, leaf.shape[0]) + (1,) * (nd - 2), dtype=leaf.dtype, ref=leaf.ref,
                index=leaf.index, attrs={"view": ("1", "{t}.shape[0]") + ("1",) * (nd - 2)})


def _running_norm(x: Expr, eps: float, name: str, what: str, param: Callable[[str], Expr]) -> Expr:
    """Eval mode: (x - running_mean) * rsqrt(running_var + eps) * weight + bias, channel by
    channel -- a pointwise chain over the running buffers, read at run time (never baked in)."""
    mean, var = param("running_mean"), param("running_var")
    if mean.kind != "param" or var.kind != "param" or x.shape is None or len(x.shape) < 2:
        raise Unsupported(f"{name}: {what} in eval mode without its running statistics or the input's shape")
    nd, shape, n = len(x.shape), x.shape, iter(range(1, 6))

    def op(kind: str, *args: Expr) -> Expr:
        return Expr("op", f"{name}_{kind}{next(n)}", op=kind, args=args, shape=shape, dtype=x.dtype)

    inv = Expr("op", f"{name}_rsqrt", op="rsqrt", shape=(1, shape[1]) + (1,) * (nd - 2), dtype=x.dtype,
               args=(Expr("op", f"{name}_var_eps", op="add", args=(_per_channel(var, nd), const(eps)),
                          shape=(1, shape[1]) + (1,) * (nd - 2), dtype=x.dtype),))
    y = op("mul", op("sub", x, _per_channel(mean, nd)), inv)
    weight, bias = param("weight"), param("bias")
    if weight.kind == "param":
        y = op("mul", y, _per_channel(weight, nd))
    if bias.kind == "param":
        y = op("add", y, _per_channel(bias, nd))
    return y


def patches(x: Expr, settings: list[Any], name: str, shape: tuple[int, ...] | None) -> Expr:
    """``x.unfold(dim, size, step)`` with step == size (a ViT's patches): the dim split into
    (count, size) by a view, the size moved last by a permute -- the same values, as ops the
    pipeline has; overlapping windows are not covered."""
    dim, size, step = settings
    if x.shape is None or not all(isinstance(v, int) and not isinstance(v, bool) for v in settings):
        raise Unsupported(f"{name}: unfold by computed settings")
    nd = len(x.shape)
    dim %= nd
    if size != step or size <= 0 or size > x.shape[dim]:
        raise Unsupported(f"no family for unfold({dim}, {size}, {step}) of a dim of {x.shape[dim]}: "
                          "only non-overlapping windows are covered")
    split = (*x.shape[:dim], x.shape[dim] // size, size, *x.shape[dim + 1:])
    # the windows as a view of the dim cut to a whole number of them (what unfold leaves out at
    # the end is left out), the count following the dim's size (``pipeline._view``)
    view = Expr("op", f"{name}_split", op="view", args=(x,), shape=split, dtype=x.dtype,
                attrs={"windows": (dim, size)})
    order = tuple(d for d in range(nd + 1) if d != dim + 1) + (dim + 1,)
    return Expr("op", name, op="permute", args=(view,), attrs={"dims": order}, shape=shape, dtype=x.dtype)


def pad(x: Expr, pads: Any, mode: Any, value: Any, name: str) -> Expr:
    """``F.pad(x, pads, "constant", value)``: pairs (before, after) from the last dim back;
    a negative one crops. The sizes are the reference's literals (a window's padding, small
    numbers the judge does not perturb); other modes (reflect, replicate, circular) are not
    covered."""
    if mode not in (None, "constant"):
        raise Unsupported(f"{name}: F.pad in {mode!r} mode (only constant padding is covered)")
    if not isinstance(pads, (list, tuple)) or not pads or len(pads) % 2 \
            or not all(isinstance(p, int) and not isinstance(p, bool) for p in pads):
        raise Unsupported(f"{name}: F.pad by {pads!r}, not pairs of ints")
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise Unsupported(f"{name}: F.pad with the fill value {value!r}")
    if x.shape is not None and len(pads) // 2 > len(x.shape):
        raise Unsupported(f"{name}: F.pad of {len(pads) // 2} dims of a {len(x.shape)}-d tensor")
    return Expr("op", name, op="pad", args=(x,), attrs={"pads": tuple(pads), "value": float(value or 0.0)})


def slice_crop(x: Expr, raw: Any, name: str) -> Expr | None:
    """``x[:, a:-b, c:-d, :]`` of a computed tensor: slices of step 1 from a fixed start to a
    stop counted from the end (or the end) -- the crop back after a shifted window's pad --
    written as a pad by negative amounts, so the crop follows the input's sizes. None for any
    other index (a positive stop would bake in the traced size)."""
    items = raw if isinstance(raw, list) else [raw]
    if x.kind not in ("op", "input") or x.shape is None or not items or len(items) > len(x.shape):
        return None
    if not all(isinstance(i, dict) and isinstance(i.get("slice"), list) and len(i["slice"]) == 3 for i in items):
        return None
    pads: list[int] = [0] * (2 * len(x.shape))
    for d, item in enumerate(items):
        start, stop, step = item["slice"]
        if step not in (None, 1) or not (start is None or isinstance(start, int) and start >= 0) \
                or not (stop is None or isinstance(stop, int) and stop < 0):
            return None
        k = len(x.shape) - 1 - d  # F.pad's pairs run from the last dim back
        pads[2 * k], pads[2 * k + 1] = -(start or 0), stop or 0
    if not any(pads):
        return None
    return Expr("op", name, op="pad", args=(x,), attrs={"pads": tuple(pads), "value": 0.0})


def strided_slice(x: Expr, raw: Any, name: str) -> Expr | None:
    """``x[:, 0::2, 1::2, :]`` of a computed tensor or an input: slices from a fixed start to
    the end by a fixed step (a patch merge's four interleaved quarters), as a ``gather`` of the
    output's elements at the input's strides. None for any other index."""
    items = raw if isinstance(raw, list) else [raw]
    if x.kind not in ("op", "input") or x.shape is None or not items or len(items) > len(x.shape):
        return None
    if not all(isinstance(i, dict) and isinstance(i.get("slice"), list) and len(i["slice"]) == 3 for i in items):
        return None
    starts, steps = [0] * len(x.shape), [1] * len(x.shape)
    for d, item in enumerate(items):
        start, stop, step = item["slice"]
        if stop is not None or not (start is None or isinstance(start, int) and start >= 0) \
                or not (step is None or isinstance(step, int) and step >= 1):
            return None
        starts[d], steps[d] = start or 0, step or 1
    if all(s == 1 for s in steps):
        return None
    return Expr("op", name, op="gather", args=(x,), attrs={"starts": tuple(starts), "steps": tuple(steps)})

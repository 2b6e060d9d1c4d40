"""A small expression IR built from the reference's traced graph.

The sandbox sends the fx graph of the reference as plain data (node names,
targets, args, shapes). This module turns it into a DAG of ``Expr`` nodes with
canonical op names, whatever spelling the reference used (``torch.relu``,
``F.relu``, ``x.relu()``, ``nn.ReLU``; ``x / y``, ``torch.div``...). Scalars that
parametrise an op (a leaky slope, an eps, clamp bounds) become ``const`` nodes,
so the templates can later bind them to constructor arguments.

The reference is never imported or run here: everything comes from the analysis.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import composite, layers, recurrent, transformer
from .calls import call_node, dropout
from .expr import Expr, Unsupported, const
from .operands import shape_of, tensor, transposed
from .vocabulary import PARAMETRIC

__all__ = ["Expr", "Traced", "Unsupported", "build", "const"]

MODULES: dict[str, tuple[str, dict[str, Any]]] = {
    "ReLU": ("relu", {}), "ReLU6": ("relu6", {}), "Sigmoid": ("sigmoid", {}), "Tanh": ("tanh", {}),
    "SiLU": ("silu", {}), "Mish": ("mish", {}), "Hardsigmoid": ("hardsigmoid", {}), "Hardswish": ("hardswish", {}),
    "SELU": ("selu", {}), "Identity": ("identity", {}), "GELU": ("gelu", {"approximate": "none"}),
    "LeakyReLU": ("leaky_relu", {"negative_slope": 0.01}), "ELU": ("elu", {"alpha": 1.0}),
    "Hardtanh": ("hardtanh", {"min_val": -1.0, "max_val": 1.0}), "Softplus": ("softplus", {"beta": 1.0,
                                                                                          "threshold": 20.0}),
    "Softmax": ("softmax", {"dim": None}), "LogSoftmax": ("log_softmax", {"dim": None}),
    "LayerNorm": ("layer_norm", {"normalized_shape": None, "eps": 1e-5}),
    "RMSNorm": ("rms_norm", {"normalized_shape": None, "eps": None}),
    "Linear": ("linear", {}), "Dropout": ("dropout", {"p": 0.5}),
}
# attributes the analysis does not report for these modules: defaults are assumed
ASSUMED_MODULE_ATTRS = {"ELU": "alpha", "Hardtanh": "min_val/max_val", "Softplus": "beta/threshold"}


@dataclass
class Traced:
    output: Expr | None
    inputs: list[Expr]
    params: dict[str, Expr]
    problems: list[str]
    assumed: list[str]


def build(analysis: dict[str, Any]) -> Traced:
    """The reference's graph as an Expr DAG; problems list what could not be expressed."""
    graph = analysis.get("graph") or []
    params = analysis.get("parameters") or {}
    env: dict[str, Expr] = {}
    inputs: list[Expr] = []
    leaves: dict[str, Expr] = {}
    problems: list[str] = []
    assumed: list[str] = []
    output: Expr | None = None
    written: dict[str, Expr] = {}  # plain tensor attributes forward copied a value into
    for node in graph:
        name, op = node["name"], node["op"]
        shape = tuple(node["shape"]) if node.get("shape") is not None else None
        try:
            if op == "placeholder":
                if len(inputs) >= len(analysis.get("inputs") or []) and node["args"] \
                        and (node["args"][0] is None or isinstance(node["args"][0], (int, float))):
                    # a parameter get_inputs does not give: its default, as the trace took it
                    env[name] = const(node["args"][0])
                    continue
                e = Expr("input", name, shape=shape, dtype=node.get("dtype"), ref=node["target"], index=len(inputs))
                value = _input_value(analysis, len(inputs))
                inputs.append(e)
                if shape is None and isinstance(value, (int, float)) and not isinstance(value, bool):
                    # a number passed to forward (``A * s``): a scalar read at run time, never baked in
                    env[name] = Expr("const", name, value=float(value), attrs={"forward": e.index})
                    continue
            elif op == "get_attr":
                key = node["target"]
                value = (node.get("attrs") or {}).get("value")
                if key not in params and isinstance(value, (int, float)) and not isinstance(value, bool):
                    env[name] = const(float(value))  # torch.tensor(v) in forward: a scalar
                    continue
                if key not in params and key in written:
                    env[name] = written[key]  # read back after forward copied into it
                    continue
                if key not in params and shape is not None:
                    # a tensor kept as a plain attribute (an RNN cell's hidden state): usable only
                    # once forward has copied its inputs into it (``state_copy``)
                    env[name] = Expr("meta", name, op="state", attrs={"attr": key}, shape=shape,
                                     value=f"attribute {key!r} is state outside the state_dict")
                    continue
                if key not in params:
                    raise Unsupported(f"{name}: attribute {key!r} is not in the state_dict")
                e = Expr("param", name, shape=tuple(params[key]["shape"]), dtype=params[key]["dtype"], ref=key)
                leaves[key] = e
            elif op == "output":
                args = node["args"]
                out = args[0] if args else None
                if not isinstance(out, str) or out not in env:
                    raise Unsupported("the reference returns several values or a non-tensor")
                output = env[out]
                continue
            elif op == "call_method" and node["target"] == "copy_" and _is_state(env, node["args"][0]):
                env[name] = written[env[node["args"][0]].attrs["attr"]] = state_copy(node, env)
                continue
            elif op == "call_module":
                e = _module_node(node, env, params, leaves, assumed)
            else:
                e = call_node(node, env)
            e.shape = shape if e.shape is None else e.shape
            e.dtype = node.get("dtype") if e.dtype is None else e.dtype
            env[name] = e
        except Unsupported as exc:
            problems.append(str(exc))
            env[name] = Expr("meta", name, op="unsupported", value=str(exc))
    if output is not None and not _draws_in_order(output):
        # each mask must be drawn in the reference's order; one draw has no order to keep
        problems.append("several random ops in one forward (dropout masks in training mode, or drawn initial "
                        "states other than a recurrent layer's h0 before its c0)")
        output = None
    return Traced(output, inputs, leaves, problems, assumed)


def _draws_in_order(output: Expr) -> bool:
    """At most one random draw, or only the normal draws of recurrent layers' initial states,
    each layer drawing its h0 before its c0 as the reference did (its host draws them so)."""
    drawn = [e for e in output.walk() if e.kind == "random"]
    if len(drawn) <= 1:
        return True
    if any(e.attrs.get("dist") != "normal" for e in drawn):
        return False
    states = [e for e in output.walk() if e.kind == "op" and e.op == "rnn"]
    order = [a.attrs["order"] for rnn in _unique(states) for a in rnn.args[1:] if a.kind == "random"]
    return len(order) == len({id(e) for e in drawn}) and order == sorted(order)


def _unique(nodes: list[Expr]) -> list[Expr]:
    """The distinct recurrent calls (a getitem copies the call node, keeping its args)."""
    seen: dict[tuple[int, ...], Expr] = {}
    for e in nodes:
        seen.setdefault(tuple(id(a) for a in e.args), e)
    return list(seen.values())


def _is_state(env: dict[str, Expr], v: Any) -> bool:
    return isinstance(v, str) and v in env and env[v].kind == "meta" and env[v].op == "state"


def state_copy(node: dict[str, Any], env: dict[str, Expr]) -> Expr:
    """``self.hidden.copy_(h0)``: the attribute holds h0's values from here on, so a read
    of it is h0 -- when h0 fills it exactly (same shape and dtype: no broadcast, no cast)."""
    name, (dst_name, src_name) = node["name"], node["args"][:2]
    dst, src = env[dst_name], tensor(env, src_name, name)
    if src.shape is None or tuple(src.shape) != tuple(dst.shape or ()) or (src.dtype or "float32") != \
            (node.get("dtype") or "float32"):
        raise Unsupported(f"{name}: a copy into attribute {dst.attrs['attr']!r} that does not fill it exactly")
    return src


def _input_value(analysis: dict[str, Any], index: int) -> Any:
    values = analysis.get("inputs") or []
    return values[index] if index < len(values) else None


def _module_node(node: dict[str, Any], env: dict[str, Expr], params: dict[str, Any], leaves: dict[str, Expr],
                 assumed: list[str]) -> Expr:
    cls, path, name = node["target"], node["module"], node["name"]

    def param(suffix: str) -> Expr:
        key = f"{path}.{suffix}"
        if key not in params:
            return const(None)
        leaves[key] = leaves.get(key) or Expr("param", key.replace(".", "_"), shape=tuple(params[key]["shape"]),
                                              dtype=params[key]["dtype"], ref=key)
        return leaves[key]

    if cls == "CrossEntropyLoss":
        attrs = node.get("attrs") or {}
        if len(node["args"]) != 2:
            raise Unsupported(f"{name}: CrossEntropyLoss with {len(node['args'])} inputs")
        x, t = (tensor(env, a, name) for a in node["args"])
        return composite.cross_entropy(x, t, {"ignore_index": attrs.get("ignore_index", -100),
                                              "label_smoothing": attrs.get("label_smoothing", 0.0),
                                              "weight": params.get(f"{path}.weight")},
                                       attrs.get("reduction", "mean"), name)
    if cls in recurrent.MODULES:
        return recurrent.module_node(cls, node.get("attrs") or {}, node, name, path, lambda v: tensor(env, v, name),
                                     params)
    if cls in transformer.MODULES:
        return transformer.module_node(cls, node.get("attrs") or {}, node, name, path, lambda v: tensor(env, v, name),
                                       param)
    if cls in composite.LOSS_MODULES:
        return composite.module_loss(cls, node.get("attrs") or {}, [tensor(env, a, name) for a in node["args"]],
                                     name)
    if cls not in MODULES:
        layer = layers.module_node(cls, node.get("attrs") or {}, tensor(env, node["args"][0], name), name, path,
                                   param) if node["args"] else None
        if layer is not None:
            return layer
        raise Unsupported(f"no family for nn.{cls} (module {path})")
    canon, defaults = MODULES[cls]
    attrs = {**defaults, **{k: v for k, v in (node.get("attrs") or {}).items() if k in defaults}}
    if cls in ASSUMED_MODULE_ATTRS:
        assumed.append(f"{path} ({cls}): {ASSUMED_MODULE_ATTRS[cls]} not reported by the analysis, "
                       "torch defaults assumed")
    x = tensor(env, node["args"][0], name)

    if canon == "linear":
        w, b = param("weight"), param("bias")
        if w.kind != "param":
            raise Unsupported(f"{name}: {path}.weight is not in the state_dict")
        mm = Expr("op", f"{name}_mm", op="matmul", args=(x, transposed(w)), shape=shape_of(node),
                  dtype=node.get("dtype"))
        return mm if b.kind == "const" else Expr("op", name, op="add", args=(mm, b))
    if canon == "dropout":
        return dropout(x, attrs["p"], (node.get("attrs") or {}).get("training", True), node)
    if canon in ("layer_norm", "rms_norm"):
        shape = attrs["normalized_shape"]
        ndims = len(shape) if isinstance(shape, (list, tuple)) else 1
        eps = const(attrs["eps"])
        return Expr("op", name, op=canon, args=(x, param("weight"), param("bias"), eps), attrs={"ndims": ndims})
    if canon in ("softmax", "log_softmax"):
        return Expr("op", name, op=canon, args=(x,), attrs={"dim": attrs["dim"]})
    if canon in PARAMETRIC:
        return Expr("op", name, op=canon, args=(x, *(const(attrs[k]) for k, _ in PARAMETRIC[canon])))
    return Expr("op", name, op=canon, args=(x,), attrs={"approximate": attrs["approximate"]} if canon == "gelu" else {})

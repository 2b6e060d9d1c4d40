"""IR nodes for the recurrent layers: ``nn.LSTM``, ``nn.GRU`` and ``nn.RNN``, any
number of layers, one or two directions, batch first or time first.

A recurrent module's call returns a tuple (the last layer's output at every step, and
the final state: ``h_n``, or ``(h_n, c_n)`` for an LSTM) that forward takes apart with
``getitem``. The module call becomes an ``rnn`` node with no ``select``; each getitem
of it becomes a copy of that node selecting one tensor (``output``, ``h_n``, ``c_n``;
an LSTM's state tuple is the intermediate ``state``), so the DAG's nodes stay tensors
and a stage computes the one it is asked for. The weights are read by name from the
module (``<path>.weight_ih_l<k>[_reverse]``...): the template takes them off the
module at run time, so hidden and input sizes follow the tensors the judge passes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .expr import Expr, Unsupported, const

# class -> gates per step (their weights stacked in weight_ih / weight_hh, torch's order)
MODULES: dict[str, int] = {"LSTM": 4, "GRU": 3, "RNN": 1}
SELECTS = ("output", "h_n", "c_n")


def module_node(cls: str, attrs: dict[str, Any], node: dict[str, Any], name: str, path: str,
                tensor: Callable[[Any], Expr], params: dict[str, Any]) -> Expr:
    """The module call as an ``rnn`` node over (x, h0, c0); h0 / c0 are const None when
    forward passes no initial state (zeros, as torch starts)."""
    what = f"nn.{cls} ({path})"
    for key in ("hidden_size", "num_layers", "batch_first", "bidirectional"):
        if key not in attrs:
            raise Unsupported(f"{name}: {what} without a reported {key}")
    if attrs.get("proj_size"):
        raise Unsupported(f"no family for {what} with proj_size (a projected LSTM)")
    if attrs.get("dropout") and attrs.get("training", True) and attrs["num_layers"] > 1:
        raise Unsupported(f"no family for {what} with dropout between layers in training mode")
    nonlinearity = attrs.get("nonlinearity", "tanh") if cls == "RNN" else None
    if nonlinearity not in (None, "tanh", "relu"):
        raise Unsupported(f"{name}: {what} with nonlinearity {nonlinearity!r}")
    args = node["args"]
    if not args:
        raise Unsupported(f"{name}: {what} called without an input")
    x = tensor(args[0])
    hx = args[1] if len(args) > 1 else node["kwargs"].get("hx")
    if cls == "LSTM":
        if hx is None:
            h0, c0 = const(None), const(None)
        elif isinstance(hx, (list, tuple)) and len(hx) == 2:
            h0, c0 = tensor(hx[0]), tensor(hx[1])
        else:
            raise Unsupported(f"{name}: {what} with an initial state that is not a (h0, c0) pair")
    else:
        if isinstance(hx, (list, tuple)):
            raise Unsupported(f"{name}: {what} with a tuple initial state")
        h0, c0 = (const(None) if hx is None else tensor(hx)), const(None)
    layers, directions = int(attrs["num_layers"]), 2 if attrs["bidirectional"] else 1
    keys = []
    for k in range(layers):
        for d in range(directions):
            suffix = f"l{k}" + ("_reverse" if d else "")
            w = (f"{path}.weight_ih_{suffix}", f"{path}.weight_hh_{suffix}")
            b = (f"{path}.bias_ih_{suffix}", f"{path}.bias_hh_{suffix}")
            if any(key not in params for key in w):
                raise Unsupported(f"{name}: {what}: {w[0]} or {w[1]} is not in the state_dict")
            keys.append((*w, *(key if key in params else None for key in b)))
    for e in (x, h0, c0):
        if e.kind == "op" and e.op == "rnn":
            raise Unsupported(f"{name}: {what} reads another recurrent layer's tuple")
    return Expr("op", name, op="rnn", args=(x, h0, c0),
                attrs={"cell": cls, "gates": MODULES[cls], "nonlinearity": nonlinearity, "layers": layers,
                       "directions": directions, "batch_first": bool(attrs["batch_first"]), "module": path,
                       "weights": tuple(keys), "select": None})


def getitem(base: Expr, index: Any, name: str) -> Expr | None:
    """``base[index]`` where base is a recurrent call or its LSTM state: the node selecting
    that tensor; None when base is neither."""
    if base.kind != "op" or base.op != "rnn":
        return None
    select = base.attrs["select"]
    if select in SELECTS:
        return None  # a tensor already: indexing it is the caller's business
    if not isinstance(index, int) or isinstance(index, bool):
        raise Unsupported(f"{name}: a recurrent layer's result indexed by {index!r}")
    index = index % 2 if -2 <= index < 2 else index
    if select is None:
        chosen = "output" if index == 0 else ("state" if base.attrs["cell"] == "LSTM" else "h_n") if index == 1 \
            else None
    else:
        chosen = {0: "h_n", 1: "c_n"}.get(index)
    if chosen is None:
        raise Unsupported(f"{name}: index {index} of a recurrent layer's result")
    return replace(base, name=name, attrs={**base.attrs, "select": chosen}, shape=None, dtype=None)

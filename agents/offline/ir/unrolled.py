"""An Elman RNN written out step by step in forward: a Python loop over the sequence, which
the trace unrolls into one copy of the cell per step (KernelBench level3/34)::

    for t in range(x.shape[0]):
        h = act(cell(torch.cat((x[t], h), dim=1)))   # cell: an nn.Linear; act: tanh or relu
        outputs.append(head(h))                      # head: any ops of h alone (a Linear...)
    return torch.stack(outputs, dim=0)

``torch.stack`` of those steps becomes one ``rnn`` node -- a one-layer ``nn.RNN`` whose input
and hidden weights are the column blocks of the cell's weight (``attrs["columns"]``: which
block comes first, as the cat orders them) -- under the head, applied once to every step's
state. Recognised only when every step is the same cell (the same weight, bias, activation
and cat order) fed the previous step's state and the sequence's next item, the loop covers
the whole sequence (so the kernel can follow the input's length), and every stacked value is
the same head of its step's state. Anything else stays unsupported, with the reason.
"""

from __future__ import annotations

from typing import Any

from .expr import Expr, Unsupported, const

ACTIVATIONS = ("tanh", "relu")


def _linear(e: Expr) -> tuple[Expr, Expr, Expr | None] | None:
    """(input, weight, bias or None) of an nn.Linear / F.linear node, else None."""
    bias = None
    if e.kind == "op" and e.op == "add" and len(e.args) == 2 and e.args[1].kind == "param":
        e, bias = e.args[0], e.args[1]
    if e.kind != "op" or e.op != "matmul" or len(e.args) != 2:
        return None
    w = e.args[1]
    if w.kind != "op" or w.op != "t" or w.args[0].kind != "param" or len(w.args[0].shape or ()) != 2:
        return None
    return e.args[0], w.args[0], bias


def _step(h: Expr, t: int) -> tuple[dict[str, Any], Expr] | None:
    """The cell's settings and the state it read, when ``h`` is step t of an Elman cell."""
    if h.kind != "op" or h.op not in ACTIVATIONS or len(h.args) != 1:
        return None
    lin = _linear(h.args[0])
    if lin is None:
        return None
    cat, w, b = lin
    if cat.kind != "op" or cat.op != "cat" or len(cat.args) != 2 or cat.attrs.get("dim") not in (1, -1):
        return None
    for k, item in enumerate(cat.args):
        if item.kind == "op" and item.op == "select" and item.args[0].kind == "input":
            index = tuple(item.attrs.get("index") or ())
            if index in ((t,), (None, t)):
                cell = {"act": h.op, "weight": w.ref, "bias": b.ref if b is not None else None, "x_first": k == 0,
                        "x": item.args[0], "batch_first": index == (None, t)}
                return cell, cat.args[1 - k]
    return None


def _same(a: Expr, b: Expr, ha: Expr, hb: Expr, seen: dict[tuple[int, int], bool]) -> bool:
    """``a`` is ``b`` with ``ha`` in place of ``hb``: the same ops, settings and leaves."""
    if a is ha or b is hb:
        return a is ha and b is hb
    key = (id(a), id(b))
    if key not in seen:
        seen[key] = a is b or (a.kind == b.kind and a.op == b.op and a.attrs == b.attrs and a.ref == b.ref
                               and a.index == b.index and a.value == b.value and len(a.args) == len(b.args)
                               and a.kind not in ("input", "random")
                               and all(_same(x, y, ha, hb, seen) for x, y in zip(a.args, b.args)))
    return seen[key]


def _above(top: Expr, stop: Any) -> list[Expr]:
    """The nodes reachable from ``top`` without passing a node ``stop`` accepts (those kept,
    not descended into), iteratively: an unrolled loop's chain is thousands of nodes deep."""
    seen: dict[int, Expr] = {}
    todo = [top]
    while todo:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen[id(e)] = e
        if not stop(e):
            todo.extend(e.args)
    return list(seen.values())


def _head_nodes(head: Expr, h: Expr) -> list[Expr]:
    """The nodes of ``head`` above the state ``h`` (h itself and what it reads left out)."""
    return [e for e in _above(head, lambda e: e is h) if e is not h]


def _reading(head: Expr, h: Expr) -> set[int]:
    """The ids of the head's nodes that read ``h`` (h among them)."""
    nodes = _head_nodes(head, h)
    reach = {id(h)}
    changed = True
    while changed:
        changed = False
        for e in nodes:
            if id(e) not in reach and any(id(a) in reach for a in e.args):
                reach.add(id(e))
                changed = True
    return reach


# ops of a head that work on each state row alone (so that they can run over every step's
# states at once): elementwise ops, a Linear, and the last dim's normalisations
ROW_OPS = frozenset({"matmul", "add", "sub", "mul", "div", "neg", "tanh", "relu", "sigmoid", "gelu", "silu", "exp",
                     "identity", "softmax", "log_softmax", "layer_norm", "rms_norm", "leaky_relu", "elu", "hardtanh",
                     "abs", "square", "sqrt", "clamp", "cast"})


def _row_wise(head: Expr, h: Expr, x: Expr, h0: Expr) -> str:
    """Why ``head`` is not a row-wise function of ``h`` alone ('' when it is)."""
    reach = _reading(head, h)
    for e in _head_nodes(head, h):
        if e is x or e is h0 or e.kind in ("input", "random"):
            return "the stacked values read more than the step's state"
        if e.kind != "op" or id(e) not in reach:
            continue
        if e.op not in ROW_OPS:
            return f"the head's {e.op} does not work row by row"
        dims = [v for k in ("dim", "dims") for v in ([e.attrs[k]] if isinstance(e.attrs.get(k), int) else
                                                     list(e.attrs.get(k) or ()))]
        if any(not isinstance(v, int) or v >= 0 for v in dims):
            return f"the head's {e.op} works along a dim counted from the front"
        if e.op == "matmul" and id(e.args[1]) in reach:
            return "the head multiplies the state by itself"
        if any(id(a) not in reach and len(a.shape or ()) > 1 for a in e.args if e.op != "matmul"):
            return f"the head's {e.op} broadcasts a tensor of more than one dim over the state"
    return ""


def _apply(e: Expr, h: Expr, states: Expr, steps: tuple[int, int], memo: dict[int, Expr], reach: set[int]) -> Expr:
    """The head ``e`` of the state ``h`` rewritten over every step's states at once: each node
    reading h (``reach``) gains a dim of the steps' count where the states hold it
    (``steps``: (count, dim); dim 1 for batch-first states, after the batch)."""
    if e is h:
        return states
    if id(e) in memo:
        return memo[id(e)]
    if id(e) not in reach:
        memo[id(e)] = e
        return e
    args = tuple(_apply(a, h, states, steps, memo, reach) for a in e.args)
    count, at = steps
    shape = (*e.shape[:at], count, *e.shape[at:]) if e.shape is not None else None
    out = Expr(e.kind, f"{e.name}_steps", op=e.op, args=args, attrs=dict(e.attrs), shape=shape, dtype=e.dtype,
               value=e.value, ref=e.ref, index=e.index, bind=e.bind)
    memo[id(e)] = out
    return out


def stack(parts: list[Expr], dim: Any, name: str) -> Expr:
    """``torch.stack(parts, dim)`` where the parts are the steps of an unrolled Elman RNN."""
    why = f"{name}: torch.stack of {len(parts)} values that are not the steps of one recurrent cell"
    if not parts or not isinstance(dim, int) or isinstance(dim, bool):
        raise Unsupported(why)
    states = []
    for t, part in enumerate(parts):
        found = [(cell, prev, e) for e in _above(part, lambda e, t=t: _step(e, t) is not None)
                 for cell, prev in [_step(e, t) or (None, None)] if cell]
        if len(found) != 1:
            raise Unsupported(f"{why} (step {t}: {len(found)} cells of the form act(Linear(cat(x[t], h))))")
        states.append(found[0])
    cell, h0, _ = states[0]
    if h0.kind != "input" or len(h0.shape or ()) != 2:
        raise Unsupported(f"{why} (the first step's state is not a 2-d forward input)")
    x = cell["x"]
    for t in range(1, len(parts)):
        other, prev, _ = states[t]
        if other != cell or prev is not states[t - 1][2]:
            raise Unsupported(f"{why} (step {t} is another cell, or does not read step {t - 1}'s state)")
    steps_dim = 1 if cell["batch_first"] else 0
    if len(x.shape or ()) != 3 or x.shape[steps_dim] != len(parts):
        raise Unsupported(f"{why} (the loop does not cover the input's whole sequence)")
    h_first = states[0][2]
    problem = _row_wise(parts[0], h_first, x, h0)  # first: it bounds how deep _same recurses
    if problem:
        raise Unsupported(f"{why} ({problem})")
    if not all(_same(parts[0], part, h_first, s[2], {}) for part, s in zip(parts, states)):
        raise Unsupported(f"{why} (the stacked values are not one head of each step's state)")
    T, B, H = len(parts), h0.shape[0], h0.shape[1]
    rnn = Expr("op", f"{name}_rnn", op="rnn", args=(x, h0, const(None)),
               attrs={"cell": "RNN", "gates": 1, "nonlinearity": cell["act"], "layers": 1, "directions": 1,
                      "batch_first": cell["batch_first"], "module": "",
                      "weights": ((cell["weight"], cell["weight"], cell["bias"], None),),
                      "columns": "input_first" if cell["x_first"] else "hidden_first", "state_2d": True,
                      "select": "output"},
               shape=(B, T, H) if cell["batch_first"] else (T, B, H), dtype=h_first.dtype)
    out = _apply(parts[0], h_first, rnn, (T, steps_dim), {}, _reading(parts[0], h_first))
    rank = len(out.shape or ())
    d = dim % rank if rank else dim
    if d == steps_dim:
        return out
    raise Unsupported(f"{name}: the unrolled steps stacked along dim {dim}, not the sequence's")


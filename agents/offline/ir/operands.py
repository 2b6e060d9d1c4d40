"""Reading a traced node's operands: its arguments by position or keyword, the nodes they
name, literal indexes and sizes, and the reference's own spelling of an op (``vocabulary``)."""

from __future__ import annotations

from typing import Any

from . import attention
from .expr import Expr, Unsupported, const
from .vocabulary import ALIASES, ELEMENTWISE, PARAMETRIC, REQUIRED


def ref(env: dict[str, Expr], v: Any) -> Expr:
    """An operand: a node name, or a literal that becomes a const."""
    if isinstance(v, str) and v in env:
        return env[v]
    if isinstance(v, (int, float, bool)) or v is None:
        return const(v)
    raise Unsupported(f"operand {v!r} is neither a traced node nor a number")


def tensor(env: dict[str, Expr], v: Any, where: str) -> Expr:
    e = ref(env, v)
    if e.kind == "meta":
        raise Unsupported(f"{where}: operand {e.name} is not a tensor the IR understands ({e.value or e.op})")
    return e


def arg(node: dict[str, Any], pos: int, key: str, default: Any) -> Any:
    args, kwargs = node["args"], node["kwargs"]
    if key in kwargs:
        return kwargs[key]
    return args[pos] if len(args) > pos else default


def scalar_params(node: dict[str, Any], env: dict[str, Expr], canon: str, first: int) -> list[Expr]:
    out = []
    for i, (key, default) in enumerate(PARAMETRIC[canon]):
        v = arg(node, first + i, key, default)
        if v is REQUIRED:
            raise Unsupported(f"{node['name']}: {canon} needs {key}")
        e = ref(env, v)
        if e.kind != "const":
            raise Unsupported(f"{node['name']}: {canon} with a tensor {key} is not supported")
        out.append(e)
    return out


def canonical(target: str) -> str:
    t = ALIASES.get(target, target)
    if t.endswith("_") and not t.startswith("_") and t[:-1] in ELEMENTWISE | {"clamp_min", "clamp_max"}:
        t = t[:-1]  # in-place spellings (relu_, mul_) compute the same values
    return t


SIZE_FORMULA = -2  # a dim computed from inputs' sizes: (SIZE_FORMULA, attention.size_arith's formula)


def input_sizes(sizes: Any, env: dict[str, Expr]) -> dict[int, tuple[int, int]]:
    """The dims of a view's target shape the reference read off a forward input
    (``x.view(-1, x.size(1), k)``): dim -> (the input's index, its dim); (-1, -1) for the
    dim it leaves to the view (-1); (SIZE_FORMULA, formula) for one it computed from sizes."""
    items = sizes[0] if len(sizes) == 1 and isinstance(sizes[0], list) else sizes
    out: dict[int, tuple[int, int]] = {}
    for d, item in enumerate(items):
        if item == -1:  # the dim the view infers
            out[d] = (-1, -1)
            continue
        e = env.get(item) if isinstance(item, str) else None
        if e is not None and attention.is_size(e) and e.args and e.args[0].kind == "input" \
                and e.args[0].shape is not None:
            out[d] = (e.args[0].index, e.attrs["dim"] % len(e.args[0].shape))
        elif e is not None and e.kind == "meta" and e.op == "size_expr":
            out[d] = (SIZE_FORMULA, e.attrs["expr"])  # type: ignore[assignment]
    return out


def index_of(raw: Any, shape: tuple[int, ...] | None = None) -> tuple[int | dict[str, int] | None, ...] | None:
    """A tensor index of ints and slices from the start (``x[:, -1, :]``, ``x[:, :K]``) as one
    entry per dim it reads: the int, None for a whole dim (``:``, or a stop at or past the
    dim's size), ``{"stop": n}`` for the first n; None for any other index (a start or step,
    None, Ellipsis, a tensor)."""
    items = raw if isinstance(raw, list) else [raw]
    out: list[int | dict[str, int] | None] = []
    for d, item in enumerate(items):
        if isinstance(item, int) and not isinstance(item, bool):
            out.append(item)
        elif isinstance(item, dict) and item.get("slice") == [None, None, None]:
            out.append(None)
        elif isinstance(item, dict) and isinstance(item.get("slice"), list) and item["slice"][0] in (None, 0) \
                and item["slice"][2] in (None, 1) and isinstance(item["slice"][1], int) \
                and not isinstance(item["slice"][1], bool) and item["slice"][1] > 0 \
                and shape is not None and d < len(shape):
            stop = item["slice"][1]
            out.append(None if stop >= shape[d] else {"stop": stop})
        else:
            return None
    return tuple(out) if out else None


def unit_view(e: Expr) -> Expr:
    """An operand of a binary op that is a parameter or input given size-1 dims to broadcast
    (``bias.view(1, -1, 1, 1)``, ``d.unsqueeze(1)``): the leaf itself, read as the new shape
    (``attrs["view"]``: the new dims over the leaf's, for forward to reshape it at run time)."""
    if e.kind != "op" or e.op != "view" or not e.args[0].is_leaf:
        return e
    src, dst = e.args[0].shape, e.shape
    if src is None or dst is None or [d for d in src if d != 1] != [d for d in dst if d != 1]:
        return e
    kept = iter(i for i, d in enumerate(src) if d != 1)
    leaf = e.args[0]
    terms = tuple("1" if d == 1 else f"{{t}}.shape[{next(kept)}]" for d in dst)
    return Expr(leaf.kind, leaf.name, shape=dst, dtype=leaf.dtype, ref=leaf.ref, index=leaf.index,
                attrs={"view": terms})


def shape_of(node: dict[str, Any]) -> tuple[int, ...] | None:
    return tuple(node["shape"]) if node.get("shape") is not None else None


def transposed(w: Expr) -> Expr:
    """nn.Linear's weight (out, in) read as (in, out)."""
    shape = tuple(reversed(w.shape)) if w.shape else None
    return Expr("op", f"{w.name}_t", op="t", args=(w,), attrs={"dims": (0, 1)}, shape=shape, dtype=w.dtype)

"""Walks over the IR DAG the matchers share: its leaves, and the check that a DAG is
elementwise over operands that broadcast to the output."""

from __future__ import annotations

from ..ir.expr import Expr
from ..templates.common import broadcast_block, broadcast_rows
from ..templates.ops import supported_elementwise
from .types import FLOATS, NoMatch


def float_leaf(e: Expr, what: str) -> Expr:
    if not e.is_leaf:
        raise NoMatch(f"{what} is computed ({e.op or e.kind} {e.name}), not an input or parameter")
    if e.dtype not in FLOATS:
        raise NoMatch(f"{what} {e.name} has dtype {e.dtype}")
    return e


def leaves_of(root: Expr, stop: frozenset[int] | set[int] = frozenset()) -> list[Expr]:
    """Inputs first (in forward order), then parameters, not looking below ``stop`` nodes."""
    seen: dict[int, Expr] = {}

    def visit(e: Expr) -> None:
        if id(e) in seen or id(e) in stop:
            return
        seen[id(e)] = e
        for a in e.args:
            visit(a)

    visit(root)
    return sorted((e for e in seen.values() if e.is_leaf), key=lambda e: (e.kind != "input", e.index, e.ref))


def check_elementwise(root: Expr, out_shape: tuple[int, ...], stop: set[int], masks: bool = False) -> list[Expr]:
    """The leaves of an elementwise DAG under ``root`` (not looking below ``stop`` nodes);
    with ``masks``, boolean inputs too (the template reads them as 0.0 / 1.0)."""
    seen: set[int] = set()

    def visit(e: Expr) -> None:
        if id(e) in seen or id(e) in stop:
            return
        seen.add(id(e))
        if e.kind == "op":
            why = supported_elementwise(e)
            if why:
                raise NoMatch(why)
            if e.op == "view" and e.args[0].shape != e.shape:
                raise NoMatch(f"{e.name}: a reshape inside the chain")
        if e.kind in ("op", "input", "param", "random") and e.shape is not None \
                and broadcast_block(e.shape, out_shape) is None and broadcast_rows(e.shape, out_shape) is None:
            raise NoMatch(f"{e.name}: shape {list(e.shape)} does not broadcast to the output {list(out_shape)} "
                          "along one contiguous block of dims (or one block and the last dim)")
        for a in e.args:
            visit(a)

    visit(root)
    found = leaves_of(root, stop)
    for leaf in found:
        if not (masks and leaf.kind == "input" and leaf.dtype == "bool"):
            float_leaf(leaf, "operand")
    return found


def epilogue_operands(root: Expr, anchor: Expr, out_shape: tuple[int, ...]) -> tuple[list[Expr], dict[int, str]]:
    """The leaves of the elementwise chain from ``anchor`` (a convolution, a norm...) to
    ``root``, each with how it is read per output element: ``scalar`` (one value),
    ``channel`` (one value per channel, dim 1) or ``full`` (the output's shape)."""
    if root is anchor:
        return [], {}
    epilogue = check_elementwise(root, out_shape, {id(anchor)})
    kinds: dict[int, str] = {}
    for leaf in epilogue:
        float_leaf(leaf, "epilogue operand")
        block = broadcast_block(tuple(leaf.shape or ()), out_shape)
        kind = {(0, -1): "scalar", (1, 1): "channel", (0, len(out_shape) - 1): "full"}.get(block or (9, 9))
        if kind is None:
            raise NoMatch(f"epilogue operand {leaf.name} {list(leaf.shape or ())} is neither a scalar, one value per "
                          "channel nor the whole output")
        kinds[id(leaf)] = kind
    return epilogue, kinds

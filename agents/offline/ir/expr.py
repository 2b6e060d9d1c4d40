"""The node of the offline engine's expression IR (built by ``ir.build`` from the
traced graph), and the exception for what it cannot express."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class Expr:
    """One node. kind: input | param | random (a dropout mask drawn in forward) | const | op |
    meta (a non-tensor value such as x.shape)."""

    kind: str
    name: str
    op: str = ""
    args: tuple[Expr, ...] = ()
    attrs: dict[str, Any] = field(default_factory=dict)
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    value: Any = None
    ref: str = ""       # forward argument name (input) or state_dict key (param)
    index: int = -1     # position among the forward inputs
    bind: tuple[int, ...] | None = None  # const only: path into the init inputs holding the value

    @property
    def is_leaf(self) -> bool:
        return self.kind in ("input", "param", "random")

    def walk(self) -> list[Expr]:
        """Every node reachable from this one, operands before users, each once."""
        seen: dict[int, Expr] = {}

        def visit(e: Expr) -> None:
            if id(e) in seen:
                return
            for a in e.args:
                visit(a)
            seen[id(e)] = e

        visit(self)
        return list(seen.values())


def const(value: Any) -> Expr:
    return Expr("const", "", value=value)


class Unsupported(Exception):
    """A node the IR cannot express; the message says which and why."""

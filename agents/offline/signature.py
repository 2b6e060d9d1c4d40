"""The constructor and forward signatures a candidate must reproduce.

Read from the reference's syntax tree (``ast`` only: parsing is not running),
or, without the source, made up from the analysis: forward arguments are the
traced placeholders, constructor arguments ``arg0``, ``arg1``...
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Arg:
    name: str
    default: str | None = None  # Python source of the default, if any
    star: str = ""              # "", "*" or "**"

    def text(self) -> str:
        return f"{self.star}{self.name}" + (f"={self.default}" if self.default is not None else "")


@dataclass(frozen=True)
class Signature:
    init: tuple[Arg, ...] = ()
    forward: tuple[Arg, ...] = ()
    source: str = "analysis"  # "ast" when read from the reference's source

    def init_names(self) -> list[str]:
        return [a.name for a in self.init if not a.star]

    def forward_names(self) -> list[str]:
        return [a.name for a in self.forward if not a.star]

    @staticmethod
    def params(args: tuple[Arg, ...]) -> str:
        return ", ".join(["self", *(a.text() for a in args)])


@dataclass
class _Found:
    init: tuple[Arg, ...] | None = None
    forward: tuple[Arg, ...] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _args(fn: ast.FunctionDef) -> tuple[Arg, ...]:
    a = fn.args
    positional = [*a.posonlyargs, *a.args][1:]  # drop self
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    out = [Arg(p.arg, _default(d)) for p, d in zip(positional, defaults, strict=True)]
    if a.vararg:
        out.append(Arg(a.vararg.arg, star="*"))
    # keyword-only arguments are never passed by the judge; give each a default
    out += [Arg(p.arg, _default(d) or "None") for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)]
    if a.kwarg:
        out.append(Arg(a.kwarg.arg, star="**"))
    return tuple(out)


def _default(node: ast.expr | None) -> str | None:
    if node is None:
        return None
    try:
        return repr(ast.literal_eval(node))
    except (ValueError, SyntaxError, TypeError):
        return "None"  # refers to names the candidate does not have


def from_source(source: str) -> Signature | None:
    """Model's signatures from the reference's source, or None if it cannot be read."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if model is None:
        return None
    found = _Found()
    for item in model.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            found.init = _args(item)
        elif isinstance(item, ast.FunctionDef) and item.name == "forward":
            found.forward = _args(item)
    if found.forward is None:
        return None
    return Signature(found.init or (), found.forward, "ast")


def from_analysis(analysis: dict[str, Any]) -> Signature:
    names = [n["target"] for n in analysis.get("graph") or [] if n["op"] == "placeholder"]
    if len(names) != len(analysis.get("inputs") or []):
        names = [f"x{i}" for i in range(len(analysis.get("inputs") or []))]
    init = tuple(Arg(f"arg{i}") for i in range(len(analysis.get("init_inputs") or [])))
    return Signature(init, tuple(Arg(n) for n in names), "analysis")

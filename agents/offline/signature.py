"""The constructor and forward signatures a candidate must reproduce.

Read from the reference's syntax tree (``ast`` only: parsing is not running),
or, without the source, made up from the analysis: forward arguments are the
traced placeholders, constructor arguments ``arg0``, ``arg1``...
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field
from typing import Any

# Names a copied constructor body may read besides its own arguments and locals: what every
# candidate module imports (templates.common.HEADER) and the builtins.
_BODY_GLOBALS = frozenset({"torch", "nn"}) | frozenset(dir(builtins))


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
    # The reference's constructor body (statements as source, its super().__init__() call left
    # out) when it reads nothing but its arguments, torch, nn and builtins: ModelNew runs it
    # to build the same submodules, parameters and buffers at every size. None otherwise.
    init_body: tuple[str, ...] | None = None

    def init_names(self) -> list[str]:
        return [a.name for a in self.init if not a.star]

    def init_assigns(self) -> set[str]:
        """The attributes the copied constructor body sets on self."""
        out: set[str] = set()
        for stmt in self.init_body or ():
            for node in ast.walk(ast.parse(stmt)):
                if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                        and isinstance(node.value, ast.Name) and node.value.id == "self":
                    out.add(node.attr)
        return out

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
    methods = {item.name for item in model.body if isinstance(item, ast.FunctionDef)} - {"__init__", "forward"}
    for item in model.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            found.init = _args(item)
            found.extra["init_body"] = _init_body(item, methods)
        elif isinstance(item, ast.FunctionDef) and item.name == "forward":
            found.forward = _args(item)
    if found.forward is None:
        return None
    body = found.extra.get("init_body")
    if body is not None:  # class attributes the constructor may read (a ResNet block's `expansion = 1`)
        body = (*_class_constants(model), *body)
    return Signature(found.init or (), found.forward, "ast", body)


def _class_constants(model: ast.ClassDef) -> list[str]:
    """``self.name = value`` for each literal class attribute of Model."""
    out = []
    for item in model.body:
        if isinstance(item, ast.Assign) and len(item.targets) == 1 and isinstance(item.targets[0], ast.Name):
            try:
                ast.literal_eval(item.value)
            except (ValueError, SyntaxError, TypeError):
                continue
            out.append(f"self.{item.targets[0].id} = {ast.unparse(item.value)}")
    return out


def _is_super_init(stmt: ast.stmt) -> bool:
    """``super().__init__(...)`` or ``super(Model, self).__init__(...)`` as a statement."""
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "__init__" \
        and isinstance(call.func.value, ast.Call) and isinstance(call.func.value.func, ast.Name) \
        and call.func.value.func.id == "super"


def _init_body(fn: ast.FunctionDef, methods: set[str] | frozenset[str] = frozenset()) -> tuple[str, ...] | None:
    """The constructor's statements, if they read only their arguments, their own locals,
    torch, nn and builtins (a module constant, a helper class of the reference's file or a
    helper method of Model -- ``self._make_layer`` -- is not in the candidate); None otherwise."""
    body = [s for s in fn.body if not _is_super_init(s)
            and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) == len(fn.body) or any(_is_super_init(s) for s in body):
        return None  # no super().__init__() call at the top level: not a plain nn.Module constructor
    a = fn.args
    known = {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]} | \
        {p.arg for p in (a.vararg, a.kwarg) if p is not None} | _BODY_GLOBALS
    names = [n for s in body for n in ast.walk(s)]
    known |= {n.id for n in names if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    known |= {n.arg for n in names if isinstance(n, ast.arg)}  # lambda / comprehension arguments
    if any(isinstance(n, ast.Attribute) and n.attr in methods and isinstance(n.value, ast.Name)
           and n.value.id == "self" for n in names):
        return None
    if any(isinstance(n, ast.Name) and n.id not in known for n in names) or \
            any(isinstance(n, (ast.Global, ast.Nonlocal, ast.FunctionDef, ast.ClassDef)) for n in names):
        return None
    return tuple(ast.unparse(s) for s in body)


def from_analysis(analysis: dict[str, Any]) -> Signature:
    names = [n["target"] for n in analysis.get("graph") or [] if n["op"] == "placeholder"]
    if len(names) != len(analysis.get("inputs") or []):
        names = [f"x{i}" for i in range(len(analysis.get("inputs") or []))]
    init = tuple(Arg(f"arg{i}") for i in range(len(analysis.get("init_inputs") or [])))
    return Signature(init, tuple(Arg(n) for n in names), "analysis")

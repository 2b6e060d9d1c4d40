"""The constructor and forward signatures a candidate must reproduce.

Read from the reference's syntax tree (``ast`` only: parsing is not running),
or, without the source, made up from the analysis: forward arguments are the
traced placeholders, constructor arguments ``arg0``, ``arg1``...
"""

from __future__ import annotations

import ast
import builtins
import copy
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
    methods = {item.name: item for item in model.body if isinstance(item, ast.FunctionDef)
               and item.name not in ("__init__", "forward")}
    for item in model.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            found.init = _args(item)
            found.extra["init_body"] = _init_body(item, methods, _module_helpers(tree))
        elif isinstance(item, ast.FunctionDef) and item.name == "forward":
            found.forward = _args(item)
    if found.forward is None:
        return None
    body = found.extra.get("init_body")
    if body is not None:  # class attributes the constructor may read (a ResNet block's `expansion = 1`)
        helpers, stmts = body
        body = (*helpers, *_class_constants(model), *stmts)
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


# Modules a copied constructor may import under the alias the reference's file gives them.
_IMPORTABLE = ("math", "torch", "torch.nn", "torch.nn.functional")


@dataclass
class _Helpers:
    """What the reference's file defines besides Model that its constructor may need:
    classes and functions (by name) and the allowed imports (alias -> statement)."""
    defs: dict[str, ast.stmt] = field(default_factory=dict)
    imports: dict[str, str] = field(default_factory=dict)


def _module_helpers(tree: ast.Module) -> _Helpers:
    out = _Helpers()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.name not in ("Model", "get_inputs",
                                                                                   "get_init_inputs"):
            out.defs[node.name] = node
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in _IMPORTABLE and alias.asname:
                    out.imports[alias.asname] = f"import {alias.name} as {alias.asname}"
                elif alias.name in _IMPORTABLE and "." not in alias.name:
                    out.imports[alias.name] = f"import {alias.name}"
    return out


def _reads(nodes: list[ast.AST]) -> set[str]:
    """Names the code reads that it does not bind itself (arguments, assignments, nested
    definitions, imports): what it needs from outside. Coarse: a name bound anywhere in it
    counts as bound everywhere in it."""
    walked = [n for node in nodes for n in ast.walk(node)]
    bound = {n.id for n in walked if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    bound |= {n.arg for n in walked if isinstance(n, ast.arg)}
    bound |= {n.name for n in walked if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    bound |= {(a.asname or a.name).split(".")[0] for n in walked if isinstance(n, (ast.Import, ast.ImportFrom))
              for a in n.names}
    return {n.id for n in walked if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound


class _SelfCalls(ast.NodeTransformer):
    """``self.m(args)`` -> ``m(self, args)`` for Model's helper methods copied as local functions."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in self.names and isinstance(f.value, ast.Name) \
                and f.value.id == "self":
            return ast.copy_location(ast.Call(ast.Name(f.attr, ast.Load()), [ast.Name("self", ast.Load()),
                                                                              *node.args], node.keywords), node)
        return node


def _self_refs(nodes: list[ast.AST], names: set[str] | dict[str, Any]) -> set[str]:
    return {n.attr for node in nodes for n in ast.walk(node) if isinstance(n, ast.Attribute) and n.attr in names
            and isinstance(n.value, ast.Name) and n.value.id == "self"}


def _init_body(fn: ast.FunctionDef, methods: dict[str, ast.FunctionDef] | None = None,
               helpers: _Helpers | None = None) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The constructor's statements, and what they need from the reference's file before
    them: its helper classes and functions (``DenseBlock``), Model's helper methods
    (``self._make_layer``, copied as local functions taking self) and the imports those
    read (``F``, ``math``), as statements of ModelNew's constructor. None when some of it
    reads anything else (a module constant, a name imported from elsewhere), uses global /
    nonlocal, or is decorated at its top: then ModelNew makes the parameters itself."""
    methods = methods or {}
    helpers = helpers or _Helpers()
    body = [s for s in fn.body if not _is_super_init(s)
            and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) == len(fn.body) or any(_is_super_init(s) for s in body):
        return None  # no super().__init__() call at the top level: not a plain nn.Module constructor
    a = fn.args
    args = {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]} | {p.arg for p in (a.vararg, a.kwarg) if p}
    body = [s for s in body if not _unread_tensor_attr(s, args | set(helpers.defs) | set(helpers.imports))]
    # what the body needs, closed over the helpers it reaches
    need_defs: list[str] = []
    need_methods: list[str] = []
    need_imports: set[str] = set()
    # (code, is it Model's own: its self is the model, whose helper methods it may call)
    todo: list[tuple[list[ast.AST], bool]] = [(list(body), True)]
    while todo:
        nodes, own = todo.pop()
        for name in sorted(_self_refs(nodes, methods) - set(need_methods) if own else ()):
            if methods[name].decorator_list:
                return None
            need_methods.append(name)
            todo.append(([methods[name]], True))
        for name in sorted(_reads(nodes) - args - _BODY_GLOBALS):
            if name in helpers.defs and name not in need_defs:
                if getattr(helpers.defs[name], "decorator_list", None):
                    return None
                need_defs.append(name)
                todo.append(([helpers.defs[name]], False))
            elif name in helpers.imports:
                need_imports.add(name)
            elif name not in helpers.defs:
                return None
    module_code = [helpers.defs[n] for n in helpers.defs if n in need_defs]
    model_code = [*(methods[n] for n in methods if n in need_methods), *body]
    if any(isinstance(n, (ast.Global, ast.Nonlocal)) for s in [*module_code, *model_code] for n in ast.walk(s)):
        return None
    if not _only_called(model_code, set(need_methods)):
        return None  # a helper method read other than by calling it (a bound method stays a method)
    rewrite = _SelfCalls(set(need_methods))
    own = [ast.unparse(ast.fix_missing_locations(rewrite.visit(copy.deepcopy(s)))) for s in model_code]
    imports = tuple(helpers.imports[n] for n in sorted(need_imports))
    return (*imports, *(ast.unparse(s) for s in module_code), *own[:len(need_methods)]), tuple(own[len(need_methods):])


_FACTORIES = frozenset({"randn", "rand", "zeros", "ones", "empty", "full", "randint"})


def _unread_tensor_attr(stmt: ast.stmt, known: set[str]) -> bool:
    """``self.h0 = torch.randn((num_layers * 2, batch_size, hidden_size))``: a plain tensor
    attribute (not a parameter, buffer or module, so not in the state_dict) made from a name
    the constructor cannot see in ModelNew's file (a module constant of the reference). The
    engine's kernels never read such an attribute (a state forward copies into is read as
    what was copied), so ModelNew's constructor leaves it out and keeps the rest."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return False
    target, value = stmt.targets[0], stmt.value
    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"):
        return False
    func = value.func if isinstance(value, ast.Call) else None
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "torch"
            and func.attr in _FACTORIES):
        return False
    return bool(_reads([value]) - known - _BODY_GLOBALS)


def _only_called(nodes: list[ast.stmt], names: set[str]) -> bool:
    """Every ``self.<name>`` among ``nodes`` is the function of a call."""
    refs = [n for s in nodes for n in ast.walk(s) if isinstance(n, ast.Attribute) and n.attr in names
            and isinstance(n.value, ast.Name) and n.value.id == "self"]
    called = {id(n.func) for s in nodes for n in ast.walk(s) if isinstance(n, ast.Call)}
    return all(id(r) in called for r in refs)


def from_analysis(analysis: dict[str, Any]) -> Signature:
    names = [n["target"] for n in analysis.get("graph") or [] if n["op"] == "placeholder"]
    if len(names) != len(analysis.get("inputs") or []):
        names = [f"x{i}" for i in range(len(analysis.get("inputs") or []))]
    init = tuple(Arg(f"arg{i}") for i in range(len(analysis.get("init_inputs") or [])))
    return Signature(init, tuple(Arg(n) for n in names), "analysis")

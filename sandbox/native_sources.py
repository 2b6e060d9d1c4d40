"""The native (C/C++) sources of a candidate, read from its syntax tree.

A ``cpu``-backend candidate builds its kernels with ``kforge_native.load_c`` /
``load_cpp``. Under the judge nothing is compiled by the candidate's process:
the judge finds every source here, statically, checks it (sandbox/policy/native.py),
has trusted code build it in the sandbox, and hands the candidate the built
libraries. So a source must be visible in the text the judge holds: a string
literal passed directly, or a module-level name bound once to a string literal.
Anything else (a computed string, a source read from a file, the loader passed
around as a value) is a finding, and the candidate cannot load it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

LOADERS = {"load_c": "c", "load_cpp": "c++"}
MODULE = "kforge_native"


@dataclass(frozen=True)
class NativeSource:
    lang: str  # "c" or "c++"
    text: str
    name: str  # the library's name (``name=``), also the file name in compiler messages
    line: int  # line of the load_c/load_cpp call in the candidate
    text_line: int  # line of the candidate where the source text starts (for findings in the C text)

    @property
    def filename(self) -> str:
        return re.sub(r"\W", "_", self.name) + (".c" if self.lang == "c" else ".cpp")


@dataclass
class Extracted:
    sources: list[NativeSource]
    findings: list[str]  # 'file:line: text'


def _module_strings(tree: ast.Module) -> tuple[dict[str, ast.Constant], set[str]]:
    """Module-level names bound once to a string literal; and names bound more than once anywhere."""
    bound: dict[str, int] = {}
    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            targets = [node.target]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
        elif isinstance(node, ast.NamedExpr):
            targets = [node.target]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound[node.name] = bound.get(node.name, 0) + 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for n in node.names:
                bound[n] = bound.get(n, 0) + 2  # rebinding from inside a function
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    bound[n.id] = bound.get(n.id, 0) + 1
    strings: dict[str, ast.Constant] = {}
    for stmt in tree.body:
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        if isinstance(value, ast.Constant) and isinstance(value.value, str) and len(targets) == 1 \
                and isinstance(targets[0], ast.Name):
            strings[targets[0].id] = value
    once = {k for k, v in bound.items() if v == 1}
    return {k: v for k, v in strings.items() if k in once}, {k for k, v in bound.items() if v > 1}


def _loader_names(tree: ast.Module) -> tuple[dict[str, str], set[str]]:
    """Local names of load_c / load_cpp (-> lang), and local names of the kforge_native module."""
    funcs: dict[str, str] = {}
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == MODULE and not node.level:
            for alias in node.names:
                if alias.name in LOADERS:
                    funcs[alias.asname or alias.name] = LOADERS[alias.name]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == MODULE:
                    modules.add(alias.asname or alias.name)
    return funcs, modules


def extract(tree: ast.Module, filename: str) -> Extracted:
    funcs, modules = _loader_names(tree)
    out = Extracted([], [])
    if not funcs and not modules:
        return out
    strings, rebound = _module_strings(tree)
    calls: set[int] = set()

    def lang_of(fn: ast.AST) -> str | None:
        if isinstance(fn, ast.Name) and fn.id in funcs:
            return funcs[fn.id]
        if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and fn.value.id in modules:
            return LOADERS.get(fn.attr)
        return None

    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or lang_of(node.func) is None:
            continue
        calls.add(id(node.func))
        lang = lang_of(node.func) or "c"
        where = f"{filename}:{node.lineno}"
        arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "source"), None)
        name_node = node.args[2] if len(node.args) > 2 else next((k.value for k in node.keywords if k.arg == "name"), None)
        name = "kernel"
        if name_node is not None:
            if isinstance(name_node, ast.Constant) and isinstance(name_node.value, str):
                name = name_node.value
            else:
                out.findings.append(f"{where}: the library name passed to load_c/load_cpp must be a string literal")
        literal: ast.Constant | None = None
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            literal = arg
        elif isinstance(arg, ast.Name) and arg.id in strings and arg.id not in rebound:
            literal = strings[arg.id]
        if literal is None:
            what = f"`{ast.unparse(arg)}`" if arg is not None else "no source"
            out.findings.append(
                f"{where}: native source {what} is computed, not a string literal: the judge builds only "
                "sources it can read (a literal, or a module-level name bound once to a literal)")
            continue
        text = str(literal.value)
        # A string's first line is where its opening quote is; a triple-quoted
        # source usually starts with a newline, so line n of the text is line
        # literal.lineno + n - 1 of the candidate.
        out.sources.append(NativeSource(lang, text, name, node.lineno, literal.lineno))
    # The loader used as a value (aliased, passed around, wrapped) hides which source it builds.
    for node in ast.walk(tree):
        if id(node) in calls:
            continue
        if (isinstance(node, ast.Name) and node.id in funcs and isinstance(node.ctx, ast.Load)) or (
                isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                and node.attr not in LOADERS and node.attr not in ("NativeError", "NativeBuildError",
                                                                   "NativeArgumentError", "NativeLibrary")):
            out.findings.append(f"{filename}:{node.lineno}: uses the native loader other than as a direct call "
                                "load_c(SOURCE, [...]): the judge could not see which source it builds")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules \
                and node.attr in LOADERS:
            out.findings.append(f"{filename}:{node.lineno}: uses {node.value.id}.{node.attr} other than as a "
                                "direct call: the judge could not see which source it builds")
    return out

"""Problem files read without running them.

The judge never imports user code, so what it needs to know about a problem
before the sandbox runs it comes from the source's syntax tree: that it parses,
that it defines ``Model`` / ``get_inputs`` / ``get_init_inputs``, its
module-level size constants (which the judge perturbs), and, where the inputs
are built from literal calls such as ``torch.randn(batch, dim)``, their shapes.

A reference whose ``get_inputs`` writes its sizes as literals
(``torch.randn(16, 1024)``) has nothing to perturb; for such a file the judge
runs a copy in which each literal size is a module name (``_kforge_dim0``),
on the same line, so error messages keep their line numbers.
"""

from __future__ import annotations

import ast
import math
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ProblemError

REQUIRED = ("Model", "get_inputs", "get_init_inputs")
_TENSOR_MAKERS = {"randn", "rand", "randint", "zeros", "ones", "empty", "randn_like", "full"}


@dataclass
class Problem:
    name: str
    path: str
    source: str
    level: int | None
    constants: dict[str, int | float] = field(default_factory=dict)
    input_shapes: list[list[int] | None] | None = None
    literal_dims: dict[str, int] = field(default_factory=dict)  # name -> the literal it replaces
    run_source: str = ""  # what the sandbox runs: the source, literal sizes named when there are any

    def size_constants(self) -> dict[str, int]:
        """Int constants that look like sizes (>= 8): the ones worth perturbing."""
        return {k: v for k, v in self.constants.items() if isinstance(v, int) and not isinstance(v, bool) and v >= 8}

    def summary(self) -> dict[str, Any]:
        return {"name": self.name, "level": self.level, "path": self.path,
                "constants": self.constants, "input_shapes": self.input_shapes}


# CPython 3.11 keeps the AST builder's recursion depth in the ast module's state, which all threads
# share: threads parsing at once can fail with "SystemError: AST constructor recursion depth mismatch"
# (reports come from threaded programs; CPython gh-106905). Seen here as a 500 on POST /v1/jobs under
# load (docs/benchmarks.md). The API parses references on several threads, so parsing takes turns.
_AST_LOCK = threading.Lock()


def parse_source(source: str, filename: str, require: tuple[str, ...] = REQUIRED) -> ast.Module:
    try:
        with _AST_LOCK:
            tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise ProblemError(f"{filename}:{exc.lineno}: SyntaxError: {exc.msg}") from exc
    defined = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    missing = [name for name in require if name not in defined]
    if missing:
        raise ProblemError(f"{filename}: defines no {', '.join('`' + m + '`' for m in missing)}")
    return tree


def module_constants(tree: ast.Module) -> dict[str, int | float]:
    """Module-level numbers: ``n = 8``, chained ``height = width = 256`` and unpacked
    ``depth, height, width = 16, 32, 32`` alike (arithmetic over earlier ones included)."""
    out: dict[str, int | float] = {}
    env: dict[str, Any] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for name, expr in assigned_names(node):
            value = _evaluate(expr, env)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out[name] = value
                env[name] = value
    return out


def assigned_names(node: ast.Assign) -> list[tuple[str, ast.expr]]:
    """(name, value expression) for each plain name an assignment binds: every target of
    a chain, and each name of a tuple unpacked from a tuple of the same length."""
    pairs: list[tuple[str, ast.expr]] = []
    for target in node.targets:
        if isinstance(target, ast.Name):
            pairs.append((target.id, node.value))
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(node.value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(node.value.elts):
            pairs += [(t.id, v) for t, v in zip(target.elts, node.value.elts, strict=True) if isinstance(t, ast.Name)]
    return pairs


def derived_values(problem: Problem, sizes: dict[str, int]) -> dict[str, Any]:
    """Module-level values computed from sizes (``bias_shape = (out_channels, 1, 1)``)
    as they come out when ``sizes`` are written in place of their defaults, as a
    fitted reference's are: each name whose value changes, tuples kept tuples.
    Arithmetic and tuples over literals and earlier values only; anything else
    keeps its default."""
    tree = parse_source(problem.source, problem.name, require=())

    def run(over: dict[str, int]) -> dict[str, Any]:
        env: dict[str, Any] = {}
        for node in tree.body:
            if isinstance(node, ast.Assign):
                for name, expr in assigned_names(node):
                    env[name] = over[name] if name in over else _evaluate(expr, env)
        return env

    default, changed = run({}), run(sizes)
    return {k: v for k, v in changed.items() if k not in sizes and v is not None and v != default.get(k)}


def _evaluate(node: ast.AST, env: dict[str, Any]) -> Any:
    """Arithmetic over literals and known constants, and tuples of them; None when anything else."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_evaluate(e, env) for e in node.elts]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items):
            return tuple(items) if isinstance(node, ast.Tuple) else items
        return None
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.BinOp):
        a, b = _evaluate(node.left, env), _evaluate(node.right, env)
        if not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
            return None
        ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
               ast.FloorDiv: lambda: a // b if b else None, ast.Div: lambda: a / b if b else None,
               ast.Pow: lambda: a ** b if abs(b) < 64 else None}
        fn = ops.get(type(node.op))
        return fn() if fn else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _evaluate(node.operand, env)
        return -v if isinstance(v, (int, float)) else None
    return None


def input_shapes(tree: ast.Module, constants: dict[str, Any]) -> list[list[int] | None] | None:
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_inputs"), None)
    if fn is None:
        return None
    env = dict(constants)
    ret = None
    for stmt in fn.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            env[stmt.targets[0].id] = stmt.value
        if isinstance(stmt, ast.Return):
            ret = stmt.value
    if not isinstance(ret, (ast.List, ast.Tuple)):
        return None
    return [_shape(env.get(e.id) if isinstance(e, ast.Name) and isinstance(env.get(e.id), ast.AST) else e, env)
            for e in ret.elts]


def input_bytes(problem: Problem, sizes: dict[str, int] | None = None) -> int | None:
    """One call's input bytes read off get_inputs (float32 assumed) at the
    problem's sizes updated by ``sizes``, or None when a shape is not a plain
    expression of constants. No code of the problem runs."""
    tree = ast.parse(problem.run_source)
    shapes = input_shapes(tree, {**problem.constants, **problem.literal_dims, **(sizes or {})})
    if not shapes or any(s is None for s in shapes):
        return None
    return sum(4 * math.prod(s) for s in shapes if s is not None)


def _shape_args(node: ast.Call) -> list[ast.AST] | None:
    """The size arguments of a tensor-maker call, or None when it is not one."""
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    if name not in _TENSOR_MAKERS:
        return None
    args = node.args[2:3] if name == "randint" else node.args
    if name == "full":
        args = node.args[:1]
    if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
        args = args[0].elts
    return list(args)


def name_literal_dims(tree: ast.Module, source: str) -> tuple[str, dict[str, int]]:
    """``source`` with each int literal >= 8 among the sizes of get_inputs'
    tensor-maker calls replaced by a module name, and those names' values."""
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_inputs"), None)
    if fn is None:
        return source, {}
    hits = sorted({(a.lineno, a.col_offset, a.end_col_offset, a.value)
                   for call in ast.walk(fn) if isinstance(call, ast.Call)
                   for a in (_shape_args(call) or [])
                   if isinstance(a, ast.Constant) and type(a.value) is int and a.value >= 8
                   and a.lineno == a.end_lineno})
    if not hits:
        return source, {}
    lines = source.splitlines(keepends=True)
    dims = {}
    for i, (line, start, end, value) in reversed(list(enumerate(hits))):
        name = f"_kforge_dim{i}"
        raw = lines[line - 1].encode("utf-8")  # ast offsets count UTF-8 bytes
        lines[line - 1] = (raw[:start] + name.encode() + raw[end:]).decode("utf-8")
        dims[name] = value
    return "".join(lines), dict(sorted(dims.items()))


def _shape(node: Any, env: dict[str, Any]) -> list[int] | None:
    if isinstance(node, ast.BinOp):  # torch.randn(b, d) * 3.0 and the like
        return _shape(node.left, env) or _shape(node.right, env)
    if not isinstance(node, ast.Call):
        return None
    # torch.randn(...).cuda() and similar: look through the method call.
    if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Call):
        return _shape(node.func.value, env)
    args = _shape_args(node)
    if args is None:
        return None
    dims = [_evaluate(a, env) for a in args]
    return [int(d) for d in dims] if all(isinstance(d, int) for d in dims) else None


def level_of(path: Path) -> int | None:
    for part in reversed(path.parts[:-1]):
        m = re.fullmatch(r"level_?(\d+)", part.lower())
        if m:
            return int(m.group(1))
    m = re.search(r"level_?(\d+)", path.stem.lower())
    return int(m.group(1)) if m else None


def load_problem(path: str | Path, source: str | None = None) -> Problem:
    p = Path(path)
    if source is None:
        try:
            source = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ProblemError(f"{p}: cannot read: {exc}") from exc
    tree = parse_source(source, p.name)
    constants = module_constants(tree)
    problem = Problem(name=p.stem, path=str(p), source=source, level=level_of(p), constants=constants,
                      input_shapes=input_shapes(tree, constants), run_source=source)
    if not problem.size_constants():
        problem.run_source, problem.literal_dims = name_literal_dims(tree, source)
    return problem


def list_problems(folder: str | Path) -> list[dict[str, Any]]:
    """Every problem file under ``folder``; files that do not parse are listed with their error."""
    root = Path(folder)
    if not root.is_dir():
        raise ProblemError(f"{root}: not a directory")
    out = []
    for path in sorted(root.rglob("*.py")):
        if path.name.startswith("_") or "solutions" in path.parts:
            continue
        try:
            out.append(load_problem(path).summary())
        except ProblemError as exc:
            out.append({"name": path.stem, "level": level_of(path), "path": str(path), "error": str(exc)})
    return out


def read_sources(*paths: str) -> list[str]:
    """The files' texts; an unreadable one is a request error (ProblemError) naming it."""
    texts = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                texts.append(f.read())
        except (OSError, UnicodeDecodeError) as exc:
            raise ProblemError(f"{path}: cannot read: {exc.strerror if isinstance(exc, OSError) else exc}") from exc
    return texts

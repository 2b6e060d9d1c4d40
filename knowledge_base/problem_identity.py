"""What identifies a problem: a signature of its reference source, its op
families, its GPU architecture and its shape regime.

``problem_signature`` reads the reference's syntax tree only (never executes
it) and hashes a normal form in which comments, docstrings, formatting, the
names of function arguments and locals, and the values of module-level size
constants no longer matter: the same module at other sizes, or a copy with
renamed variables, maps to the same signature, so a new job starts from the
archived winner. Sizes are the judge's notion: module-level int constants
>= 8, or >= 1 when the name says it is a size (``batch_size = 2``) rather than
a dim or a window (``reduce_dim = 1``, ``kernel_size = 3``).
"""

from __future__ import annotations

import ast
import hashlib
import re
from typing import Any

from taxonomy import op_families

VERSION = "v1"  # bump when the normal form changes: archive keys change with it

_SIZE_NAME = re.compile(r"batch|seq|len|features|channels|height|width|hidden|heads|tokens|rows|cols|^n_|^num_|"
                        r"_size$|^[mnkbhwcl]$", re.IGNORECASE)
_NOT_SIZE = re.compile(r"kernel|stride|pad|dilation|group|dim|axis", re.IGNORECASE)


class _Normalise(ast.NodeTransformer):
    def visit_Module(self, node: ast.Module) -> ast.Module:
        node.body = [self._size_constant(s) for s in _drop_docstring(node.body)]
        self.generic_visit(node)
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.ClassDef:
        node.body = _drop_docstring(node.body) or [ast.Pass()]
        self.generic_visit(node)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.body = _drop_docstring(node.body) or [ast.Pass()]
        node.returns = None
        _rename_locals(node)
        self.generic_visit(node)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.annotation = None
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if node.value is None:
            return node
        return ast.Assign(targets=[node.target], value=node.value, lineno=node.lineno)

    @staticmethod
    def _size_constant(stmt: ast.stmt) -> ast.stmt:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = _int_value(stmt.value)
            if value is not None and _is_size(stmt.targets[0].id, value):
                stmt.value = ast.Name(id="_SIZE", ctx=ast.Load())
        return stmt


def _drop_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[1:]
    return body


def _int_value(node: ast.expr) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _is_size(name: str, value: int) -> bool:
    """The judge perturbs every int constant >= 8, so those are sizes whatever their name; a smaller one
    only when named like a size (``batch_size = 2``) and not like a dim or window (``reduce_dim = 1``)."""
    return value >= 8 or (value >= 1 and bool(_SIZE_NAME.search(name)) and not _NOT_SIZE.search(name))


def _rename_locals(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    """Arguments (but ``self``) and names assigned in the body become a0, a1, ... in order of appearance."""
    names: dict[str, str] = {}
    args = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
    args += [a for a in (fn.args.vararg, fn.args.kwarg) if a is not None]
    for a in args:
        if a.arg != "self":
            names.setdefault(a.arg, f"a{len(names)}")
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.setdefault(node.id, f"a{len(names)}")
    for node in ast.walk(fn):
        if isinstance(node, ast.arg) and node.arg in names:
            node.arg = names[node.arg]
        elif isinstance(node, ast.Name) and node.id in names:
            node.id = names[node.id]


def normal_form(reference_source: str) -> str:
    """The text that is hashed; for a source that does not parse, its whitespace-collapsed text."""
    try:
        tree = _Normalise().visit(ast.parse(reference_source))
    except SyntaxError:
        return " ".join(reference_source.split())
    return ast.unparse(ast.fix_missing_locations(tree))


def problem_signature(reference_source: str) -> str:
    """``v1:`` + sha256 of the normal form."""
    return f"{VERSION}:{hashlib.sha256(normal_form(reference_source).encode()).hexdigest()}"


# -- op families from the judge's analysis -------------------------------------------------------------------
# The one table of op families (taxonomy/op_families.py), with the traced graph's spellings.
_BY_OP = op_families.by_op(spellings=True) | {op: "elementwise" for op in op_families.ELEMENTWISE}
_RANK = {f: i for i, f in enumerate(op_families.NAMES)}


def _op_names(analysis: dict[str, Any]) -> set[str]:
    names = {str(op).lower() for op in (analysis.get("ops") or {})}
    for node in analysis.get("graph") or []:
        if node.get("op") in ("call_function", "call_method", "call_module"):
            names.add(str(node.get("target", "")).lower().removeprefix("torch.").rstrip("_") or "")
    return names - {""}


def op_families(analysis: dict[str, Any]) -> list[str]:
    """Families the reference's ops fall in, the main computation first.

    Read from the aten op counts (``ops``) and the traced graph (``graph``).
    Written-out patterns count too: exp with a sum and a max is a softmax, a
    matmul next to a softmax is attention, a mean with a (r)sqrt is a norm.
    "other" only when no known op is seen.
    """
    names = _op_names(analysis)
    found = {_BY_OP[n] for n in names if n in _BY_OP}
    if {"exp"} <= names and names & {"sum"} and names & {"max", "amax"}:
        found.add("softmax")
    if "matmul" in found and "softmax" in found:
        found.add("attention")
    if "mean" in names and names & {"rsqrt", "sqrt"}:
        found.add("norm")
    if not found:
        found.add("other")
    return sorted(found, key=_RANK.__getitem__)


def arch_of(analysis: dict[str, Any], backend: str | None = None) -> str:
    """"sm_90" from the analysis's hardware line "NVIDIA H100 (sm_90)"; "cpu" without a GPU.
    For the cpu backend (native C), the CPU's widest SIMD: "cpu-avx512", "cpu-avx2" or "cpu"."""
    if backend == "cpu":
        return cpu_arch(analysis)
    hardware = str(analysis.get("hardware", analysis.get("device", "cpu")))
    found = re.search(r"sm_?(\d+)", hardware)
    return f"sm_{found.group(1)}" if found else "cpu"


CPU_ISAS = ("avx512", "avx2")  # widest first


def cpu_flags(analysis: dict[str, Any]) -> set[str]:
    """The CPU's ISA flags: from the analysis (``cpu.isa`` or the hardware line) when the sandbox
    reports them, else from this host's /proc/cpuinfo (the judge runs on the same host)."""
    cpu = analysis.get("cpu")
    if isinstance(cpu, dict) and cpu.get("isa"):
        return {str(f).lower() for f in cpu["isa"]}
    hardware = str(analysis.get("hardware", "")).lower()
    named = {f for f in ("avx512f", "avx2") if f in hardware}
    return named or host_cpu_flags()


def host_cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.partition(":")[2].split())
    except OSError:
        pass
    return set()


def cpu_arch(analysis: dict[str, Any]) -> str:
    """The hardware key of CPU strategies and archived C kernels: the widest SIMD the CPU has."""
    flags = cpu_flags(analysis)
    if "avx512f" in flags:
        return "cpu-avx512"
    if "avx2" in flags:
        return "cpu-avx2"
    return "cpu"


def dtypes_of(analysis: dict[str, Any]) -> list[str]:
    seen: list[str] = []
    for t in analysis.get("inputs") or []:
        if isinstance(t, dict) and t.get("dtype") and t["dtype"] not in seen:
            seen.append(str(t["dtype"]))
    return seen


def shape_regime(analysis: dict[str, Any]) -> str:
    """A short description of the sizes: "inputs [4096, 16384] float32; last dim 16384 (long rows)"."""
    shapes = [t for t in analysis.get("inputs") or [] if isinstance(t, dict) and "shape" in t]
    if not shapes:
        return ""
    described = ", ".join(f"{list(t['shape'])} {t.get('dtype', '')}".strip() for t in shapes[:3])
    last = max((t["shape"][-1] for t in shapes if t["shape"]), default=0)
    size = "short rows" if last <= 1024 else "medium rows" if last <= 8192 else "long rows"
    return f"inputs {described}; last dim {last} ({size})"

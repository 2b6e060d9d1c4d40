"""What every C template shares: the elementwise code generator (an Expr DAG to
C statements over floats), C literals, and the module around the kernels in the
candidate format of the cpu backend (module-level string-literal sources built
by ``kforge_native.load_c``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...ir.expr import Expr
from ...template_context import Context
from ..common import NotRenderable, model_class
from ..ops import OpWriter

HEADER = "import torch\nimport torch.nn as nn\nfrom kforge_native import load_c, scratch\n"

# Ops that are a cheap expression of their first argument where it is > 0 (their costly
# branch, exp, is for the rest): the elementwise template's positive fast path
# (``CWriter.positive``) writes these when a block of that argument is all positive.
POSITIVE_FORMS = {"elu": "{0}", "selu": "1.0507009873554805f * {0}"}
# small helpers the generated expressions use besides mathlib's
INLINE = '''static inline float kf_max(float a, float b) { return (a != a || a > b) ? a : b; }
static inline float kf_min(float a, float b) { return (a != a || a < b) ? a : b; }
static inline float kf_clamp(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }'''
C_RESERVED = {"i", "r", "c", "n", "b", "start", "end", "rows", "cols", "out", "nblocks", "int", "float", "double",
              "const", "return", "for", "if", "else", "static", "inline", "void", "char", "long", "short", "union",
              "signed", "unsigned", "auto", "register", "restrict", "sizeof", "struct", "switch", "case", "default",
              "do", "while", "goto", "break", "continue", "enum", "extern", "typedef", "volatile"}


def c_float(v: float) -> str:
    """A float literal in C."""
    v = float(v)
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    text = repr(v)
    return text + "f" if ("." in text or "e" in text) else text + ".0f"


def require_float32(*dtypes: str | None) -> None:
    bad = [d for d in dtypes if d not in (None, "float32")]
    if bad:
        raise NotRenderable(f"the C templates compute float32 tensors; this one is {bad[0]}")


def helper_names(code: str) -> set[str]:
    """The mathlib helpers a piece of generated C calls."""
    return {n for n in ("kf_exp", "kf_log", "kf_sigmoid", "kf_tanh", "kf_erf", "kf_softplus") if n + "(" in code}


@dataclass
class CWriter(OpWriter):
    """Writes one C statement (``const float v = ...;``) per op node of an elementwise DAG
    (ops.OpWriter). Bound constants become float arguments of the kernel."""

    # C variables known to be > 0 here: an op of POSITIVE_FORMS on one of them is written
    # in its positive form (the caller checked the block)
    positive: set[str] = field(default_factory=set)
    column = "c"

    def name_for(self, e: Expr) -> str:
        base = "v_" + "".join(ch if ch.isalnum() else "_" for ch in (e.name or "v"))
        return self.fresh_name(base, self.reserved | C_RESERVED | set(self.values.values()) | set(self.scalars))

    def literal(self, v: Any) -> str:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise NotRenderable(f"constant {v!r} is not a number")
        return c_float(v)

    def statement(self, var: str, expr: str) -> str:
        return f"const float {var} = {expr};"

    def spelled(self, op: str, args: list[str]) -> str:
        if op in POSITIVE_FORMS and args[0] in self.positive:
            return POSITIVE_FORMS[op].format(*args)
        return super().spelled(op, args)

    POWERS: ClassVar[dict[str, str]] = {"sqrt": "sqrtf({0})", "rsqrt": "(1.0f / sqrtf({0}))", "product": "({0})",
                                        "inverse": "(1.0f / ({0}))", "other": "powf({0}, {1})"}

    def number(self, v: float) -> str:
        return c_float(v)


def strips(cond: str, width: str, red: str) -> str:
    """The opening of a kernel's loop over every outer index and strip of ``{tile}``
    consecutive inner indices of a contiguous (outer, ``red``, inner) array ``x``: one OpenMP
    iteration a strip, parallel where ``cond``; ``i0`` the strip's first inner index, ``width``
    its length, ``xo`` its first element. A template's text (``{tile}``, ``{schedule}`` are
    filled when it is rendered) left open at the strip's body."""
    return ("    const int64_t strips = (inner + {tile} - 1) / {tile};\n"
            f"    #pragma omp parallel for collapse(2) {{schedule}} if({cond})\n"
            "    for (int64_t o = 0; o < outer; o++) {{\n"
            "        for (int64_t t = 0; t < strips; t++) {{\n"
            "            const int64_t i0 = t * {tile};\n"
            f"            const int64_t {width} = inner - i0 < {{tile}} ? inner - i0 : {{tile}};\n"
            f"            const float* xo = x + o * {red} * inner + i0;\n")


def c_doc(what: str, params: dict[str, Any]) -> str:
    """A C candidate's docstring: what it computes and the parameter set it was written with."""
    knobs = ", ".join(f"{k}={v}" for k, v in params.items())
    return f"{what} in C (offline engine, no LLM, backend cpu).\n\nParameters: {knobs}.\n"


def load_line(functions: list[str], name: str) -> list[str]:
    """``lib = load_c(SRC, [...prototypes...], name=...)``, one prototype a line."""
    return ["lib = load_c(SRC, [", *(f'    "{f}",' for f in functions), f'], name="{name}")']


def module_source(doc: str, c_source: str, functions: list[str], name: str, host: list[str], ctx: Context,
                  forward: list[str], uses_math: bool = False) -> str:
    """The whole candidate: docstring, imports, the C source as a module-level literal, the
    library, the host wrapper(s) and ModelNew."""
    if "'''" in c_source:
        raise ValueError("the C source must not contain ''' (it is a raw string literal)")
    cls = model_class(ctx, forward, "Same constructor, parameters and forward signature as the reference's Model.")
    parts = [f'"""{doc}"""\n', ("import math\n\n" if uses_math else "") + HEADER,
             "SRC = r'''\n" + c_source.strip("\n") + "\n'''\n" + "\n".join(load_line(functions, name)) + "\n",
             "\n\n".join(h.rstrip("\n") for h in host) + "\n", cls]
    return "\n\n".join(p.rstrip("\n") for p in parts) + "\n"


def omp_schedule(params: dict[str, object]) -> str:
    """`schedule(static)` / `schedule(dynamic, 4)` from a parameter set."""
    kind = str(params.get("schedule", "static"))
    chunk = params.get("chunk")
    return f"schedule({kind}{', ' + str(chunk) if chunk else ''})"


def simd_pragma(params: dict[str, object], extra: str = "") -> str:
    """`#pragma omp simd`, with `simdlen(n)` when the parameter set fixes the vector length
    (16 floats on AVX2 = two registers per step: an unroll by two)."""
    n = int(params.get("simdlen", 0) or 0)  # type: ignore[call-overload]
    return "#pragma omp simd" + (f" simdlen({n})" if n else "") + (f" {extra}" if extra else "")


@dataclass
class CEpilogue:
    """What a matched elementwise epilogue adds to a C kernel (a conv's, a norm's): its C
    arguments after ``y``, the per-output loads and statements, the result expression,
    and the host's and forward's side of the same operands."""

    c_args: list[str]
    docs: list[str]
    operands: list[str]
    prep: list[str]
    forward_ops: list[str]
    statements: list[str]
    result: str
    scalars: dict[str, str]


def c_epilogue(ctx: Context, spec: dict, anchor: Expr, index: dict[str, str], reserved: set[str],
               like: str = "y") -> CEpilogue:
    """The chain from ``anchor`` (read as ``acc``) to ``spec["root"]`` over ``spec["epilogue"]``'s
    leaves; ``index``: the C index each kind of operand (scalar, channel, full) is read at. The
    host's preparation (``prep``) runs after it allocated the output ``like``: a random operand
    (dropout's mask, output-shaped) is drawn there."""
    writer = CWriter(ctx, {}, reserved=reserved)
    out = CEpilogue([], [], [], [], [], [], "", {})
    for leaf in spec["epilogue"]:
        v = writer.name_for(leaf)
        kind = spec["kinds"][id(leaf)]
        if leaf.kind == "random" and kind != "full":
            raise NotRenderable(f"{leaf.ref}: a random operand not shaped like the output")
        out.c_args.append(f"const float* {v}_p")
        out.operands.append(f"{v}, ")
        out.prep.append(f"    {v} = {ctx.draw(leaf, like) if leaf.kind == 'random' else v + '.contiguous()'}\n")
        out.forward_ops.append(ctx.leaf_arg(leaf, drawn=True))
        out.statements.append(f"const float {v} = {v}_p[{index[kind]}];")
        out.docs.append(f"{v}_p: {leaf.ref}, " + {"scalar": "one value", "channel": "one value per output channel",
                                                   "full": "the output's shape"}[kind])
        writer.values[id(leaf)] = v
    writer.values[id(anchor)] = "acc"
    out.result = writer.emit(spec["root"])
    out.statements += writer.lines
    out.scalars = dict(writer.scalars)
    return out

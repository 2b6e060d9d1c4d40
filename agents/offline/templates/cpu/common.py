"""What every C template shares: the elementwise code generator (an Expr DAG to
C statements over floats), C literals, and the module around the kernels in the
candidate format of the cpu backend (module-level string-literal sources built
by ``kforge_native.load_c``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ...ir import Expr
from ...template_context import Context
from ..common import model_class

HEADER = "import torch\nimport torch.nn as nn\nfrom kforge_native import load_c\n"

_UNARY = {
    "relu": "({0} > 0.0f ? {0} : 0.0f)",
    "relu6": "({0} > 6.0f ? 6.0f : ({0} > 0.0f ? {0} : 0.0f))",
    "sigmoid": "kf_sigmoid({0})",
    "tanh": "kf_tanh({0})",
    "silu": "{0} * kf_sigmoid({0})",
    "mish": "{0} * kf_tanh(kf_softplus({0}, 1.0f, 20.0f))",
    "hardsigmoid": "kf_clamp({0} / 6.0f + 0.5f, 0.0f, 1.0f)",
    "hardswish": "{0} * kf_clamp({0} + 3.0f, 0.0f, 6.0f) / 6.0f",
    "selu": "1.0507009873554805f * ({0} > 0.0f ? {0} : 1.6732632423543772f * (kf_exp({0}) - 1.0f))",
    "exp": "kf_exp({0})", "log": "logf({0})", "abs": "fabsf({0})", "sqrt": "sqrtf({0})",
    "rsqrt": "(1.0f / sqrtf({0}))", "sin": "sinf({0})", "cos": "cosf({0})", "erf": "kf_erf({0})",
    "neg": "(-{0})", "reciprocal": "(1.0f / {0})", "square": "({0} * {0})",
    "leaky_relu": "({0} > 0.0f ? {0} : {0} * {1})",
    "elu": "({0} > 0.0f ? {0} : {1} * (kf_exp({0}) - 1.0f))",
    "softplus": "kf_softplus({0}, {1}, {2})",
    "add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})", "div": "({0} / {1})",
    "maximum": "kf_max({0}, {1})", "minimum": "kf_min({0}, {1})",
}
_PASS_THROUGH = {"identity", "cast", "view"}
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


class NotRenderable(ValueError):
    """The match is valid but this backend's template does not cover it (e.g. a dtype)."""


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
class CWriter:
    """Writes one C statement (``const float v = ...;``) per op node of an elementwise DAG.

    ``values`` maps nodes already available (loaded operands, an accumulator) to C
    variable names. Bound constants become float arguments of the kernel, collected in
    ``scalars`` (C argument -> forward expression).
    """

    ctx: Context
    values: dict[int, str]
    reserved: set[str] = field(default_factory=set)
    lines: list[str] = field(default_factory=list)
    scalars: dict[str, str] = field(default_factory=dict)
    # C variables known to be > 0 here: an op of POSITIVE_FORMS on one of them is written
    # in its positive form (the caller checked the block)
    positive: set[str] = field(default_factory=set)

    def name_for(self, e: Expr) -> str:
        base = "v_" + "".join(ch if ch.isalnum() else "_" for ch in (e.name or "v"))
        taken = self.reserved | C_RESERVED | set(self.values.values()) | set(self.scalars)
        name = base
        while name in taken:
            name += "_"
        return name

    def operand(self, e: Expr) -> str:
        if e.kind == "const":
            bound = self.ctx.scalar(e)
            if bound:
                self.scalars[bound[0]] = bound[1]
                return bound[0]
            v = e.value
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise NotRenderable(f"constant {v!r} is not a number")
            return c_float(v)
        return self.emit(e)

    def emit(self, e: Expr) -> str:
        if id(e) in self.values:
            return self.values[id(e)]
        if e.kind != "op":
            raise ValueError(f"{e.name}: a {e.kind} node reached the code generator without a value")
        if e.op in _PASS_THROUGH:
            var = self.operand(e.args[0])
            self.values[id(e)] = var
            return var
        if e.op in ("clamp", "hardtanh"):
            args = [self.operand(e.args[0])] + [self.operand(a) if not (a.kind == "const" and a.value is None)
                                                else "" for a in e.args[1:3]]
        else:
            args = [self.operand(a) for a in e.args]
        expr = self._formula(e, args)
        var = self.name_for(e)
        self.lines.append(f"const float {var} = {expr};")
        self.values[id(e)] = var
        return var

    def _formula(self, e: Expr, args: list[str]) -> str:
        op = e.op
        if op == "gelu":
            x = args[0]
            if e.attrs.get("approximate") == "tanh":
                return f"0.5f * {x} * (1.0f + kf_tanh(0.7978845608028654f * ({x} + 0.044715f * {x} * {x} * {x})))"
            return f"0.5f * {x} * (1.0f + kf_erf({x} * 0.7071067811865476f))"
        if op in ("clamp", "hardtanh"):
            out = args[0]
            if args[1]:
                out = f"kf_max({out}, {args[1]})"
            if args[2]:
                out = f"kf_min({out}, {args[2]})"
            return out
        if op == "pow":
            return _pow(args[0], float(e.args[1].value))
        if op in POSITIVE_FORMS and args[0] in self.positive:
            return POSITIVE_FORMS[op].format(*args)
        return _UNARY[op].format(*args)


def _pow(base: str, exponent: float) -> str:
    if exponent == 0.5:
        return f"sqrtf({base})"
    if exponent == -0.5:
        return f"(1.0f / sqrtf({base}))"
    if float(exponent).is_integer() and 0 < abs(exponent) <= 8:
        prod = " * ".join([base] * int(abs(exponent)))
        return f"({prod})" if exponent > 0 else f"(1.0f / ({prod}))"
    return f"powf({base}, {c_float(exponent)})"


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


def c_epilogue(ctx: Context, spec: dict, anchor: Expr, index: dict[str, str], reserved: set[str]) -> CEpilogue:
    """The chain from ``anchor`` (read as ``acc``) to ``spec["root"]`` over ``spec["epilogue"]``'s
    leaves; ``index``: the C index each kind of operand (scalar, channel, full) is read at."""
    writer = CWriter(ctx, {}, reserved=reserved)
    out = CEpilogue([], [], [], [], [], [], "", {})
    for leaf in spec["epilogue"]:
        v = writer.name_for(leaf)
        kind = spec["kinds"][id(leaf)]
        out.c_args.append(f"const float* {v}_p")
        out.operands.append(f"{v}, ")
        out.prep.append(f"    {v} = {v}.contiguous()\n")
        out.forward_ops.append(ctx.leaf_arg(leaf))
        out.statements.append(f"const float {v} = {v}_p[{index[kind]}];")
        out.docs.append(f"{v}_p: {leaf.ref}, " + {"scalar": "one value", "channel": "one value per output channel",
                                                   "full": "the output's shape"}[kind])
        writer.values[id(leaf)] = v
    writer.values[id(anchor)] = "acc"
    out.result = writer.emit(spec["root"])
    out.statements += writer.lines
    out.scalars = dict(writer.scalars)
    return out

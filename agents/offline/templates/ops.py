"""The elementwise ops the engine writes, in one table with a column per language, and
the code generator both backends share: ``OpWriter`` turns an Expr DAG into one statement
per op node; ``common.ExprWriter`` (Triton) and ``cpu/common.CWriter`` (C) say only how
a name, a literal, a statement and a power are written in their language.

Adding an op: its row here (Triton, C and torch: the matcher's fingerprint evaluates the
torch column) and its name in ``ir/vocabulary.py`` (a test checks that every op the IR
names has a row)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
import torch.nn.functional as F

from ..ir.expr import Expr
from ..template_context import Context


@dataclass(frozen=True)
class Op:
    triton: str  # a format string over the op's arguments {0}, {1}, ...
    c: str
    torch: Callable[..., Any]  # the op in torch, over the same arguments (the matcher's fingerprint evaluates it)


OPS: dict[str, Op] = {
    "relu": Op("tl.maximum({0}, 0.0)", "({0} > 0.0f ? {0} : 0.0f)", torch.relu),
    "relu6": Op("tl.minimum(tl.maximum({0}, 0.0), 6.0)", "({0} > 6.0f ? 6.0f : ({0} > 0.0f ? {0} : 0.0f))", F.relu6),
    "sigmoid": Op("tl.sigmoid({0})", "kf_sigmoid({0})", torch.sigmoid),
    "tanh": Op("_tanh({0})", "kf_tanh({0})", torch.tanh),
    "silu": Op("{0} * tl.sigmoid({0})", "{0} * kf_sigmoid({0})", F.silu),
    "mish": Op("{0} * _tanh(_softplus({0}, 1.0, 20.0))", "{0} * kf_tanh(kf_softplus({0}, 1.0f, 20.0f))", F.mish),
    "hardsigmoid": Op("tl.minimum(tl.maximum({0} / 6.0 + 0.5, 0.0), 1.0)", "kf_clamp({0} / 6.0f + 0.5f, 0.0f, 1.0f)",
                      F.hardsigmoid),
    "hardswish": Op("{0} * tl.minimum(tl.maximum({0} + 3.0, 0.0), 6.0) / 6.0",
                    "{0} * kf_clamp({0} + 3.0f, 0.0f, 6.0f) / 6.0f", F.hardswish),
    "selu": Op("1.0507009873554805 * tl.where({0} > 0.0, {0}, 1.6732632423543772 * (tl.exp({0}) - 1.0))",
               "1.0507009873554805f * ({0} > 0.0f ? {0} : 1.6732632423543772f * (kf_exp({0}) - 1.0f))", F.selu),
    "exp": Op("tl.exp({0})", "kf_exp({0})", torch.exp),
    "log": Op("tl.log({0})", "logf({0})", torch.log),
    "abs": Op("tl.abs({0})", "fabsf({0})", torch.abs),
    "sqrt": Op("tl.sqrt({0})", "sqrtf({0})", torch.sqrt),
    "rsqrt": Op("tl.rsqrt({0})", "(1.0f / sqrtf({0}))", torch.rsqrt),
    "sin": Op("tl.sin({0})", "sinf({0})", torch.sin),
    "cos": Op("tl.cos({0})", "cosf({0})", torch.cos),
    "erf": Op("tl.erf({0})", "kf_erf({0})", torch.erf),
    "neg": Op("-{0}", "(-{0})", torch.neg),
    "reciprocal": Op("1.0 / {0}", "(1.0f / {0})", torch.reciprocal),
    "square": Op("{0} * {0}", "({0} * {0})", torch.square),
    "leaky_relu": Op("tl.where({0} > 0.0, {0}, {0} * {1})", "({0} > 0.0f ? {0} : {0} * {1})", F.leaky_relu),
    "elu": Op("tl.where({0} > 0.0, {0}, {1} * (tl.exp({0}) - 1.0))", "({0} > 0.0f ? {0} : {1} * (kf_exp({0}) - 1.0f))",
              F.elu),
    "softplus": Op("_softplus({0}, {1}, {2})", "kf_softplus({0}, {1}, {2})", F.softplus),
    "add": Op("{0} + {1}", "({0} + {1})", torch.add),
    "sub": Op("{0} - {1}", "({0} - {1})", torch.sub),
    "mul": Op("{0} * {1}", "({0} * {1})", torch.mul),
    "div": Op("{0} / {1}", "({0} / {1})", torch.div),
    "maximum": Op("tl.maximum({0}, {1})", "kf_max({0}, {1})", torch.maximum),
    "minimum": Op("tl.minimum({0}, {1})", "kf_min({0}, {1})", torch.minimum),
}
# Formulas the generator picks by an op's attributes (gelu), and ops it writes itself:
# clamp / hardtanh (a maximum and a minimum, each bound optional) and pow (by exponent).
FORMULAS: dict[str, Op] = {
    "gelu": Op("0.5 * {0} * (1.0 + tl.erf({0} * 0.7071067811865476))",
               "0.5f * {0} * (1.0f + kf_erf({0} * 0.7071067811865476f))", F.gelu),
    "gelu_tanh": Op("0.5 * {0} * (1.0 + _tanh(0.7978845608028654 * ({0} + 0.044715 * {0} * {0} * {0})))",
                    "0.5f * {0} * (1.0f + kf_tanh(0.7978845608028654f * ({0} + 0.044715f * {0} * {0} * {0})))",
                    lambda x: F.gelu(x, approximate="tanh")),
}
WRITTEN = {"gelu", "clamp", "hardtanh", "pow"}
PASS_THROUGH = {"identity", "cast", "view"}


def supported_elementwise(e: Expr) -> str | None:
    """Why this op node cannot go through an OpWriter, or None if it can."""
    if e.op in PASS_THROUGH or e.op in OPS or e.op in WRITTEN - {"pow"}:
        return None
    if e.op == "pow":
        ex = e.args[1] if len(e.args) > 1 else None
        ok = ex is not None and ex.kind == "const" and isinstance(ex.value, (int, float)) and "forward" not in ex.attrs
        return None if ok else f"{e.name}: pow with a tensor exponent or one passed to forward"
    return f"{e.name}: {e.op} is not elementwise"


@dataclass
class OpWriter:
    """Writes one statement per op node of an elementwise DAG (``lines``).

    ``values`` maps nodes already available in the kernel (loaded operands, an
    accumulator) to their variable names. Bound constants become kernel arguments,
    collected in ``scalars`` (kernel argument -> forward expression)."""

    ctx: Context
    values: dict[int, str]
    reserved: set[str] = field(default_factory=set)
    lines: list[str] = field(default_factory=list)
    scalars: dict[str, str] = field(default_factory=dict)
    column = ""  # the table's column: "triton" or "c"

    # -- the language ------------------------------------------------------------------------------
    def name_for(self, e: Expr) -> str:
        raise NotImplementedError

    def literal(self, v: Any) -> str:
        raise NotImplementedError

    def statement(self, var: str, expr: str) -> str:
        raise NotImplementedError

    # How the language writes the forms ``power`` picks: {0} the base (or the product of
    # ``exponent`` bases, for "product" and "inverse"), {1} the exponent (``number``).
    POWERS: ClassVar[dict[str, str]] = {}

    def number(self, v: float) -> str:
        raise NotImplementedError

    def power(self, base: str, exponent: float) -> str:
        if exponent in (0.5, -0.5):
            return self.POWERS["sqrt" if exponent > 0 else "rsqrt"].format(base)
        if float(exponent).is_integer() and 0 < abs(exponent) <= 8:
            prod = " * ".join([base] * int(abs(exponent)))
            return self.POWERS["product" if exponent > 0 else "inverse"].format(prod)
        return self.POWERS["other"].format(base, self.number(exponent))

    def spelled(self, op: str, args: list[str]) -> str:
        return getattr(OPS.get(op) or FORMULAS[op], self.column).format(*args)

    # -- shared ------------------------------------------------------------------------------------
    def fresh_name(self, base: str, taken: set[str]) -> str:
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
            return self.literal(e.value)
        return self.emit(e)

    def emit(self, e: Expr) -> str:
        if id(e) in self.values:
            return self.values[id(e)]
        if e.kind != "op":
            raise ValueError(f"{e.name}: a {e.kind} node reached the code generator without a value")
        if e.op in PASS_THROUGH:
            var = self.operand(e.args[0])
            self.values[id(e)] = var
            return var
        if e.op in ("clamp", "hardtanh"):  # a bound of None is no bound
            args = [self.operand(e.args[0])] + [self.operand(a) if not (a.kind == "const" and a.value is None)
                                                else "" for a in e.args[1:3]]
        else:
            args = [self.operand(a) for a in e.args]
        expr = self.formula(e, args)
        var = self.name_for(e)
        self.lines.append(self.statement(var, expr))
        self.values[id(e)] = var
        return var

    def formula(self, e: Expr, args: list[str]) -> str:
        op = e.op
        if op == "gelu":
            return self.spelled("gelu_tanh" if e.attrs.get("approximate") == "tanh" else "gelu", args)
        if op in ("clamp", "hardtanh"):
            out = args[0]
            if args[1]:
                out = self.spelled("maximum", [out, args[1]])
            if args[2]:
                out = self.spelled("minimum", [out, args[2]])
            return out
        if op == "pow":
            return self.power(args[0], float(e.args[1].value))
        return self.spelled(op, args)


def formula(e: Expr, ctx: Any = None) -> str:
    """The DAG as one nested expression, for docstrings."""
    if e.kind == "const":
        bound = ctx.scalar(e) if ctx is not None else None
        return bound[0] if bound else repr(e.value)
    if e.is_leaf:
        return e.ref
    if e.op in ("identity", "cast", "view"):
        return formula(e.args[0], ctx)
    tanh = e.op == "gelu" and e.attrs.get("approximate") == "tanh"
    extra = ", approximate='tanh'" if tanh else ""
    return f"{e.op}({', '.join(formula(a, ctx) for a in e.args)}{extra})"

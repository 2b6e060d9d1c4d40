"""Pieces every template shares: the elementwise code generator (an Expr DAG
to Triton statements), small @triton.jit helpers it may need, broadcast
indexing of operands, and the ModelNew class around the kernels."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..ir import Expr
from ..template_context import Context

HEADER = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"

HELPERS = {
    "_tanh": '''@triton.jit
def _tanh(x):
    """tanh through e = exp(-2|x|): no overflow for large |x|."""
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0.0, -t, t)
''',
    "_softplus": '''@triton.jit
def _softplus(x, beta, threshold):
    """log(1 + exp(beta * x)) / beta, linear above the threshold as in torch."""
    z = x * beta
    return tl.where(z > threshold, x, tl.log(1.0 + tl.exp(tl.minimum(z, threshold))) / beta)
''',
}

_UNARY = {
    "relu": "tl.maximum({0}, 0.0)",
    "relu6": "tl.minimum(tl.maximum({0}, 0.0), 6.0)",
    "sigmoid": "tl.sigmoid({0})",
    "tanh": "_tanh({0})",
    "silu": "{0} * tl.sigmoid({0})",
    "mish": "{0} * _tanh(_softplus({0}, 1.0, 20.0))",
    "hardsigmoid": "tl.minimum(tl.maximum({0} / 6.0 + 0.5, 0.0), 1.0)",
    "hardswish": "{0} * tl.minimum(tl.maximum({0} + 3.0, 0.0), 6.0) / 6.0",
    "selu": "1.0507009873554805 * tl.where({0} > 0.0, {0}, 1.6732632423543772 * (tl.exp({0}) - 1.0))",
    "exp": "tl.exp({0})", "log": "tl.log({0})", "abs": "tl.abs({0})", "sqrt": "tl.sqrt({0})",
    "rsqrt": "tl.rsqrt({0})", "sin": "tl.sin({0})", "cos": "tl.cos({0})", "erf": "tl.erf({0})",
    "neg": "-{0}", "reciprocal": "1.0 / {0}", "square": "{0} * {0}",
    "leaky_relu": "tl.where({0} > 0.0, {0}, {0} * {1})",
    "elu": "tl.where({0} > 0.0, {0}, {1} * (tl.exp({0}) - 1.0))",
    "softplus": "_softplus({0}, {1}, {2})",
    "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "div": "{0} / {1}",
    "maximum": "tl.maximum({0}, {1})", "minimum": "tl.minimum({0}, {1})",
}
_PASS_THROUGH = {"identity", "cast", "view"}
# names the generated kernels and host wrappers use themselves
KERNEL_NAMES = {"tl", "triton", "torch", "nn", "math", "pid", "offs", "mask", "n_elements", "out_ptr", "out", "shape",
                "grid", "BLOCK"}


def _pow(base: str, exponent: float) -> str:
    if exponent == 0.5:
        return f"tl.sqrt({base})"
    if exponent == -0.5:
        return f"tl.rsqrt({base})"
    if float(exponent).is_integer() and 0 < abs(exponent) <= 8:
        prod = " * ".join([base] * int(abs(exponent)))
        return prod if exponent > 0 else f"1.0 / ({prod})"
    # negative bases give NaN, as torch does for a non-integer exponent
    return f"tl.exp({float(exponent)!r} * tl.log({base}))"


@dataclass
class ExprWriter:
    """Writes one Triton statement per op node of an elementwise DAG.

    ``values`` maps nodes already available in the kernel (loaded operands,
    an accumulator) to their variable names. Bound constants become kernel
    arguments, collected in ``scalars`` (kernel argument -> forward expression).
    """

    ctx: Context
    values: dict[int, str]
    reserved: set[str] = field(default_factory=set)
    lines: list[str] = field(default_factory=list)
    helpers: set[str] = field(default_factory=set)
    scalars: dict[str, str] = field(default_factory=dict)

    def name_for(self, e: Expr) -> str:
        base = e.name or "v"
        # constructor arguments become kernel arguments of the same name: keep clear of them too
        taken = self.reserved | KERNEL_NAMES | self.ctx.init_attrs() | set(self.values.values())
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
            return repr(float(v)) if isinstance(v, (int, float)) and not isinstance(v, bool) else repr(v)
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
        args = [self.operand(a) for a in e.args]
        expr = self._formula(e, args)
        var = self.name_for(e)
        self.lines.append(f"{var} = {expr}")
        self.values[id(e)] = var
        return var

    def _formula(self, e: Expr, args: list[str]) -> str:
        op = e.op
        if op == "gelu":
            x = args[0]
            if e.attrs.get("approximate") == "tanh":
                self.helpers.add("_tanh")
                return f"0.5 * {x} * (1.0 + _tanh(0.7978845608028654 * ({x} + 0.044715 * {x} * {x} * {x})))"
            return f"0.5 * {x} * (1.0 + tl.erf({x} * 0.7071067811865476))"
        if op in ("clamp", "hardtanh"):
            out = args[0]
            lo, hi = e.args[1], e.args[2]
            if not (lo.kind == "const" and lo.value is None):
                out = f"tl.maximum({out}, {args[1]})"
            if not (hi.kind == "const" and hi.value is None):
                out = f"tl.minimum({out}, {args[2]})"
            return out
        if op == "pow":
            return _pow(args[0], float(e.args[1].value))
        for helper in ("_tanh", "_softplus"):
            if helper in _UNARY.get(op, ""):
                self.helpers.add(helper)
        return _UNARY[op].format(*args)


def supported_elementwise(e: Expr) -> str | None:
    """Why this op node cannot go through ExprWriter, or None if it can."""
    if e.op in _PASS_THROUGH or e.op in _UNARY or e.op in ("gelu", "clamp", "hardtanh"):
        return None
    if e.op == "pow":
        ex = e.args[1] if len(e.args) > 1 else None
        ok = ex is not None and ex.kind == "const" and isinstance(ex.value, (int, float)) and "forward" not in ex.attrs
        return None if ok else f"{e.name}: pow with a tensor exponent or one passed to forward"
    return f"{e.name}: {e.op} is not elementwise"


def helper_source(names: Iterable[str]) -> str:
    # _softplus is used by mish together with _tanh; emit in a fixed order
    return "\n\n".join(HELPERS[n] for n in ("_tanh", "_softplus") if n in set(names))


# -- broadcast operands ------------------------------------------------------------------------------
def broadcast_block(shape: tuple[int, ...], out: tuple[int, ...]) -> tuple[int, int] | None:
    """For an operand that broadcasts to ``out``: the dims [lo, hi] (counted in ``out``)
    where it varies, if they are contiguous -- element i of the output then reads the
    operand at (i // prod(out[hi+1:])) % numel. (0, -1) means a single value.
    None when the operand cannot be read that way."""
    if len(shape) > len(out):
        return None
    padded = (1,) * (len(out) - len(shape)) + tuple(shape)
    varying = [d for d, s in enumerate(padded) if s != 1]
    if not varying:
        return (0, -1)
    lo, hi = varying[0], varying[-1]
    if any(padded[d] != out[d] for d in range(lo, hi + 1)):
        return None
    return (lo, hi)


def prod_expr(shape_var: str, start: int, ndim: int) -> str:
    if start >= ndim:
        return "1"
    return f"math.prod({shape_var}[{start}:])"


def dtype_of(name: str | None) -> str:
    return f"torch.{name or 'float32'}"


def triton_float(dtype: str | None) -> str:
    return "tl.float64" if dtype == "float64" else "tl.float32"


def needs_upcast(dtype: str | None) -> bool:
    return dtype in ("float16", "bfloat16")


# -- the module ----------------------------------------------------------------------------------------
def model_class(ctx: Context, forward_lines: list[str], doc: str) -> str:
    """ModelNew with the reference's signatures and state_dict entries."""
    sig = ctx.signature
    init = ["        super().__init__()"]
    init += [f"        self.{attr} = {arg}" for attr, arg in ctx.stored_inits()]
    init += ["        " + line for line in ctx.param_lines()]
    body = "\n".join("        " + line for line in forward_lines)
    return (f"class ModelNew(nn.Module):\n"
            f'    """{doc}"""\n\n'
            f"    def __init__({sig.params(sig.init)}) -> None:\n" + "\n".join(init) + "\n\n"
            f"    def forward({sig.params(sig.forward)}) -> torch.Tensor:\n{body}\n")


def module_source(doc: str, parts: list[str], uses_math: bool = False) -> str:
    head = f'"""{doc}"""\n\n' + ("import math\n\n" if uses_math else "") + HEADER
    return head + "\n\n" + "\n\n".join(p.rstrip("\n") + "\n" for p in parts if p).replace("\n\n\n\n", "\n\n\n")


def wrap(head: str, args: list[str], tail: str, indent: str = "", width: int = 110) -> list[str]:
    """``head(args)tail`` on one line, or with the arguments wrapped inside the parentheses."""
    one = f"{indent}{head}({', '.join(args)}){tail}"
    if len(one) <= width:
        return [one]
    body, line = [], ""
    for arg in args:  # whole arguments per line, never split inside one
        if line and len(indent) + 4 + len(line) + len(arg) + 2 > width:
            body.append(line.rstrip())
            line = ""
        line += arg + ", "
    body.append(line.rstrip().rstrip(","))
    return [f"{indent}{head}(", *(f"{indent}    {b}" for b in body), f"{indent}){tail}"]


def doc_lines(text: str, indent: str = "", width: int = 110) -> list[str]:
    """A long line of docstring text folded at spaces."""
    return textwrap.wrap(text, width - len(indent), break_long_words=False, break_on_hyphens=False,
                         subsequent_indent="    ") or [""]


@dataclass
class Epilogue:
    """A Triton epilogue over an anchor's value ``acc``: the operands' names, their load
    statements (``indent`` deep), their docstring lines, and the result expression."""

    names: list[str]
    loads: list[str]
    docs: list[str]
    result: str


def triton_epilogue(writer: ExprWriter, spec: dict, loads: dict[str, str], indent: str) -> Epilogue:
    """Loads each of ``spec["epilogue"]``'s leaves as ``loads[its kind]`` says (``{v}`` its
    name), then writes the chain from them to ``spec["root"]``."""
    out = Epilogue([], [], [], "")
    for leaf in spec["epilogue"]:
        v = writer.name_for(leaf)
        writer.values[id(leaf)] = v
        out.names.append(v)
        load = loads[spec["kinds"][id(leaf)]].format(v=v)
        out.loads.append(f"{indent}{v} = {load}" + (".to(tl.float32)" if needs_upcast(leaf.dtype) else "") + "\n")
        out.docs.append(f"{v}_ptr: {leaf.ref}, {spec['kinds'][id(leaf)]} operand of the epilogue")
    out.result = writer.emit(spec["root"])
    return out

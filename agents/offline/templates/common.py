"""Pieces every template shares: the elementwise code generator (an Expr DAG
to Triton statements), small @triton.jit helpers it may need, broadcast
indexing of operands, and the ModelNew class around the kernels."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..ir.expr import Expr
from ..template_context import Context, NotRenderable
from .ops import FORMULAS, OPS, OpWriter

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

# names the generated kernels and host wrappers use themselves
KERNEL_NAMES = {"tl", "triton", "torch", "nn", "math", "pid", "offs", "mask", "n_elements", "out_ptr", "out", "shape",
                "grid", "BLOCK"}


@dataclass
class ExprWriter(OpWriter):
    """Writes one Triton statement per op node of an elementwise DAG (ops.OpWriter), and
    collects the device helpers (``_tanh``, ``_softplus``) the statements call."""

    helpers: set[str] = field(default_factory=set)
    column = "triton"

    def name_for(self, e: Expr) -> str:
        # constructor arguments become kernel arguments of the same name: keep clear of them too
        taken = self.reserved | KERNEL_NAMES | self.ctx.init_attrs() | set(self.values.values())
        return self.fresh_name(e.name or "v", taken)

    def literal(self, v: Any) -> str:
        return repr(float(v)) if isinstance(v, (int, float)) and not isinstance(v, bool) else repr(v)

    def statement(self, var: str, expr: str) -> str:
        return f"{var} = {expr}"

    def spelled(self, op: str, args: list[str]) -> str:
        form = (OPS.get(op) or FORMULAS[op]).triton
        self.helpers.update(h for h in ("_tanh", "_softplus") if h + "(" in form)
        return form.format(*args)

    # negative bases give NaN for "other", as torch does for a non-integer exponent
    POWERS: ClassVar[dict[str, str]] = {"sqrt": "tl.sqrt({0})", "rsqrt": "tl.rsqrt({0})", "product": "{0}",
                                        "inverse": "1.0 / ({0})", "other": "tl.exp({1} * tl.log({0}))"}

    def number(self, v: float) -> str:
        return repr(float(v))


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


def broadcast_rows(shape: tuple[int, ...], out: tuple[int, ...]) -> tuple[int, int] | None:
    """For an operand ``broadcast_block`` cannot read: the block [lo, hi] of leading dims it
    varies along when it also varies along the output's whole last dim, broadcast over the
    dims between (``(B, 1, K)`` into ``(B, D, K)``). Row r of the output (its last dim) then
    reads the operand's row (r // prod(out[hi+1:-1])) % prod(out[lo:hi+1]). None otherwise."""
    nd = len(out)
    if len(shape) > nd or nd < 3:
        return None
    padded = (1,) * (nd - len(shape)) + tuple(shape)
    varying = [d for d in range(nd - 1) if padded[d] != 1]
    if padded[-1] != out[-1] or not varying:
        return None
    lo, hi = varying[0], varying[-1]
    if hi == nd - 2 or any(padded[d] != out[d] for d in range(lo, hi + 1)):
        return None
    return lo, hi


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


# The recurrent cells as both recurrent templates' kernels number them.
RNN_CELLS: dict[Any, int] = {"LSTM": 0, "GRU": 1, ("RNN", "tanh"): 2, ("RNN", "relu"): 3}


def recurrent_call(match: Any, ctx: Context) -> tuple[dict[str, Any], str]:
    """What both recurrent templates' hosts are written from (``HOST.format`` fields: the cell's
    number, layers, directions, gates, which tensor is returned...) and forward's call of the host,
    ``recurrent(x, h0, c0, [(w_ih, w_hh, b_ih, b_hh) per layer and direction])``: weights read
    off the module at run time, a missing initial state or bias as None."""
    spec = match.spec
    key = spec["cell"] if spec["cell"] != "RNN" else ("RNN", spec["nonlinearity"])
    if key not in RNN_CELLS:
        raise NotRenderable(f"{match.kind}: no cell for {key!r}")
    x, h0, c0 = spec["x"], spec["h0"], spec["c0"]
    if any(e.dtype not in (None, "float32") for e in (x, h0, c0) if e.kind == "input"):
        raise NotRenderable(f"{match.kind}: the recurrent templates compute float32")
    bf = bool(spec["batch_first"])
    xs = ctx.forward_arg(x.index)
    weights = ", ".join("(" + ", ".join("None" if k is None else ctx.param_access(k) for k in keys) + ")"
                        for keys in spec["weights"])
    if spec.get("columns"):
        # an unrolled cell (ir/unrolled.py): one Linear over cat(x_t, h) or cat(h, x_t), its
        # weight's column blocks the input and hidden weights
        (w_key, _, b_key, _), = spec["weights"]
        w = ctx.param_access(w_key)
        cut = f"{xs}.shape[2]" if spec["columns"] == "input_first" else f"{w}.shape[0]"
        first, second = f"{w}[:, :{cut}].contiguous()", f"{w}[:, {cut}:].contiguous()"
        w_ih, w_hh = (first, second) if spec["columns"] == "input_first" else (second, first)
        weights = f"({w_ih}, {w_hh}, {'None' if b_key is None else ctx.param_access(b_key)}, None)"
    # A drawn initial state (forward's torch.randn when none is given) is drawn here as the
    # reference drew it, h0 before c0 (ir.graph._draws_in_order): same shape, same generator.
    hidden = f"{ctx.param_access(spec['weights'][0][1])}.shape[1]"
    drawn = f"torch.randn({spec['layers'] * spec['directions']}, {xs}.shape[{0 if bf else 1}], {hidden}, device={xs}.device)"
    state = [ctx.forward_arg(e.index) + (".unsqueeze(0)" if spec.get("state_2d") else "") if e.kind == "input"
             else drawn if e.kind == "random" else "None" for e in (h0, c0)]
    fields = {"what": match.kind, "layers": spec["layers"], "directions": spec["directions"], "gates": spec["gates"],
              "select": spec["select"], "steps": "x.shape[1], x.shape[0]" if bf else "x.shape[0], x.shape[1]",
              "gru": int(spec["cell"] == "GRU"), "batch_first": int(bf), "cell": RNN_CELLS[key],
              "result": {"output": "out", "h_n": "hn", "c_n": "cn"}[spec["select"]]}
    return fields, f"recurrent({xs}, {state[0]}, {state[1]}, [{weights}])"


def fused_parts(match: Any) -> tuple[Context, Expr, list[Expr], tuple[int, ...]]:
    """An elementwise match as both renders read it: a fresh naming context, the DAG's root,
    its leaves (the operands) and the output's shape."""
    spec = match.spec
    return match.ctx.fresh(), spec["root"], spec["leaves"], spec["out_shape"]


@dataclass
class Operands:
    """What each operand of a fused elementwise kernel adds to its loads, its docstring and its
    host (the C and Triton templates add their own fields)."""

    host_args: list[str] = field(default_factory=list)
    loads: list[str] = field(default_factory=list)
    docs: list[str] = field(default_factory=list)
    prep: list[str] = field(default_factory=list)


def pad_settings(match: Any, max_dims: int) -> tuple[list[int], list[int], float]:
    """Both pad templates' settings: the pads before and after each dim and the fill; a tensor
    of more than ``max_dims`` dims is not renderable."""
    spec = match.spec
    before, after = list(spec["before"]), list(spec["after"])
    if len(before) > max_dims:
        raise NotRenderable(f"a pad of a {len(before)}-d tensor (the templates pad up to {max_dims} dims)")
    return before, after, float(spec["value"])


def gather_head(spec: dict[str, Any], device: str = "") -> list[str]:
    """The permute templates' host lines up to the copy: ``perm``, ``steps``, the output (the
    permuted sizes, each dim's count from its start by its step) and ``src``, x's values from
    the starts' offset on -- a permute has starts 0 and steps 1; a strided slice
    (``x[:, 0::2]``) the identity permutation. ``device``: the output's device argument."""
    perm = tuple(spec["perm"])
    starts, steps = tuple(spec.get("starts") or (0,) * len(perm)), tuple(spec.get("steps") or (1,) * len(perm))
    what = f"x.permute{perm}" if starts == (0,) * len(perm) and steps == (1,) * len(perm) else \
        f"x strided from {starts} by {steps}"
    return [f'    """{what}, contiguous."""',
            "    x = x.contiguous()",
            f"    perm, starts, steps = {perm!r}, {starts!r}, {steps!r}",
            "    out = torch.empty([max(0, (x.shape[p] - starts[p] + steps[p] - 1) // steps[p]) for p in perm],",
            f"                      dtype=x.dtype{', device=' + device if device else ''})",
            "    src = x.reshape(-1)[sum(a * t for a, t in zip(starts, x.stride())):]"]

"""Recognise which family of starter kernels fits a reference, from its analysis.

``match(analysis)`` returns the matches best-first (empty when nothing fits);
``match_report`` adds the reasons each family was turned down. The analysis is
the plain data the sandbox computed (fx graph, shapes, parameters, aten ops);
when tracing failed, a few single-op references are still recognised from the
op list alone.
"""

from __future__ import annotations

from typing import Any

from ..ir import graph as ir
from ..ir import vocabulary
from ..ir.expr import Expr, const
from ..signature import Signature, from_analysis
from ..template_context import Context
from ..templates.common import broadcast_block
from . import conv as match_conv
from . import layers as match_layers
from . import norm as match_norm
from . import pipeline as match_pipeline
from .dag import check_elementwise, epilogue_operands, float_leaf, leaves_of
from .fingerprint import recognise
from .types import FLOATS, Match, MatchReport, NoMatch

# matchers of the layer families, tried after the core ones and before elementwise
LAYERS = (match_conv.conv, match_layers.pooling, match_layers.arg_reduction, match_layers.scan, match_norm.channel_norm,
          match_layers.attention, match_layers.triangle, match_layers.cross_entropy, match_layers.concat,
          match_layers.permute, match_layers.recurrent, match_layers.pad)
INDICES = ("int64",)  # the outputs of INDEX_OPS
INDEX_OPS = {"argreduce"}


def match(analysis: dict[str, Any]) -> list[Match]:
    return match_report(analysis).matches


def match_report(analysis: dict[str, Any], signature: Signature | None = None) -> MatchReport:
    ctx = Context.from_analysis(analysis, signature or from_analysis(analysis))
    if len(analysis.get("outputs") or []) != 1:
        return MatchReport([], ["the reference returns several outputs; the offline templates write one"])
    out = analysis["outputs"][0]
    if not isinstance(out, dict) or out.get("dtype") not in (*FLOATS, *INDICES):
        return MatchReport([], [f"the output is neither a floating-point nor an index tensor ({out!r:.80})"])
    if analysis.get("graph_error") or not analysis.get("graph"):
        root, reasons = _from_ops(analysis)
        if root is None:
            why = analysis.get("graph_error") or "no graph"
            return MatchReport([], [f"tracing the reference failed ({why}) and its op list "
                                    f"{sorted(analysis.get('ops') or {})} is not a single recognisable op", *reasons])
        note = f"guessed from the op list, tracing failed: {analysis.get('graph_error')}"
        assumed: list[str] = []
    else:
        traced = ir.build(analysis)
        if traced.output is None:
            return MatchReport([], traced.problems or ["the traced graph has no output"])
        root, note, assumed = traced.output, "", traced.assumed
        bad = [n for n in root.walk() if n.kind == "meta"]
        if bad:  # operands come first in walk order: the first one is the cause
            first = bad[0]
            return MatchReport([], [str(first.value or f"{first.name}: {first.op} is not supported")])
    out_shape = tuple(out["shape"])
    if out["dtype"] in INDICES and not (root.kind == "op" and root.op in INDEX_OPS):
        return MatchReport([], [f"no family for an {out['dtype']} output computed by {_chain(root)}"])
    matches, reasons = _match_all(root, out_shape, ctx)
    # No one family, or only a fused reduction (which not every backend's template
    # writes): a chain of families too, each stage one kernel.
    if all(_fused(m) for m in matches):
        # Stages may be fused reductions (x / sqrt(sum(x * x)): the square read inside the sum),
        # which the C templates write; the same chain without them follows, for the backends
        # whose reduction template does not fuse (Triton's refuses the first).
        kinds = set()
        for stage_matches in (_match_all, _match_unfused):
            try:
                chain = match_pipeline.pipeline(root, out_shape, ctx, stage_matches)
            except NoMatch as exc:
                reasons.append(f"pipeline: {exc}")
                continue
            if chain.kind not in kinds:
                kinds.add(chain.kind)
                matches.append(chain)
    for m in matches:
        m.note = "; ".join(x for x in (m.note, note, *assumed) if x)
    if not matches:  # every op is known, their combination is not: name it first
        reasons.insert(0, f"no family for {_chain(root)}")
    return MatchReport(matches, reasons)


def _match_all(root: Expr, out_shape: tuple[int, ...], ctx: Context) -> tuple[list[Match], list[str]]:
    """Every one-family match of the DAG under ``root``, best first, and why the others failed."""
    matches, reasons = [], []
    for matcher in (_matmul, _row_op, _reduction, _written_row_op, *LAYERS, _elementwise):
        try:
            m = matcher(root, out_shape, ctx)
        except NoMatch as exc:
            reasons.append(f"{matcher.__name__.strip('_').replace('_', ' ')}: {exc}")
            continue
        for e in (m.spec.get("root"), *m.spec.get("consts", ())):
            if isinstance(e, Expr):
                ctx.bind(e)
        matches.append(m)
    return matches, reasons


def _fused(m: Match) -> bool:
    """A match fusing pointwise ops into a reduction or softmax (C writes it; Triton's templates
    refuse it and take the same chain as pipeline stages)."""
    if m.family == "softmax":
        return m.spec.get("anchor") is not None
    return m.family == "reduction" and bool(m.spec.get("prologue") or m.spec.get("epilogue"))


def _match_unfused(root: Expr, out_shape: tuple[int, ...], ctx: Context) -> tuple[list[Match], list[str]]:
    """``_match_all`` without fused reductions (the pipeline's stages)."""
    matches, reasons = _match_all(root, out_shape, ctx)
    return [m for m in matches if not _fused(m)], reasons


def _chain(root: Expr) -> str:
    """The ops of a DAG in forward order, e.g. ``matmul -> softmax``."""
    ops = [n.op for n in root.walk() if n.kind == "op" and n.op not in ("identity", "cast", "view")]
    return " -> ".join(dict.fromkeys(ops)) or "a copy of an input"


# -- helpers ---------------------------------------------------------------------------------------
def _norm_dim(dim: Any, ndim: int) -> int:
    if not isinstance(dim, int) or not -ndim <= dim < max(ndim, 1):
        raise NoMatch(f"dim {dim!r} is not a dim of a {ndim}-d tensor")
    return dim % ndim


# -- matchers --------------------------------------------------------------------------------------
def _elementwise(root: Expr, out_shape: tuple[int, ...], ctx: Context) -> Match:
    leaves = check_elementwise(root, out_shape, set(), masks=True)
    if not leaves:
        raise NoMatch("the output depends on no input")
    ops = [n.op for n in root.walk() if n.kind == "op" and n.op not in ("identity", "cast", "view")]
    kind = " -> ".join(dict.fromkeys(ops)) or "copy"
    return Match("elementwise", kind, ctx, {"root": root, "leaves": leaves, "out_shape": out_shape})


def _row_op(root: Expr, out_shape: tuple[int, ...], ctx: Context) -> Match:
    if root.kind != "op" or root.op not in vocabulary.ROW_OPS:
        return _softmax_epilogue(root, out_shape, ctx)
    x = float_leaf(root.args[0], f"the {root.op} input")
    if x.kind != "input" or tuple(x.shape or ()) != out_shape:
        raise NoMatch(f"the {root.op} input is not a forward input of the output's shape")
    nd = len(out_shape)
    if root.op in ("softmax", "log_softmax"):
        dim = root.attrs.get("dim")
        if dim is None:  # torch's legacy implicit dim
            dim = 0 if nd in (0, 1, 3) else 1
        return Match("softmax", root.op, ctx, {"x": x, "dim": _norm_dim(dim, nd), "log": root.op == "log_softmax",
                                               "out_shape": out_shape})
    _, weight, bias, eps = root.args
    m = _norm_match(root.op, x, weight, bias, eps, root.attrs["ndims"], out_shape, ctx, "")
    m.note = root.attrs.get("assumed", "")
    return m


def _softmax_epilogue(root: Expr, out_shape: tuple[int, ...], ctx: Context) -> Match:
    """Softmax / log_softmax of a forward input, then an elementwise chain over scalars,
    per-channel values and output-shaped operands (``sigmoid(softmax(x, 1)) * s``): the
    chain is applied in the writing pass (C; Triton writes it as a pipeline)."""
    rows = [n for n in root.walk() if n.kind == "op" and n.op in ("softmax", "log_softmax")]
    if len(rows) != 1 or root.kind != "op":
        raise NoMatch("the output is not softmax, log_softmax, layer_norm or rms_norm")
    sm = rows[0]
    if tuple(sm.shape or ()) != out_shape:
        raise NoMatch("the epilogue changes the softmax's shape")
    epilogue, kinds = epilogue_operands(root, sm, out_shape)
    m = _row_op(sm, out_shape, ctx)
    m.spec.update(root=root, epilogue=epilogue, kinds=kinds, anchor=sm)
    ops = (n.op for n in root.walk() if n.kind == "op" and n is not sm and n.op not in ("identity", "cast"))
    m.kind += "".join(f" + {o}" for o in dict.fromkeys(ops))
    return m


def _norm_match(kind: str, x: Expr, weight: Expr, bias: Expr, eps: Expr, ndims: int, out_shape: tuple[int, ...],
                ctx: Context, label: str, axis: int | None = None) -> Match:
    """``axis``: the one dim normalised when it is not the last (no weight or bias then)."""
    if not 1 <= ndims <= len(out_shape):
        raise NoMatch(f"{kind} over {ndims} dims of a {len(out_shape)}-d tensor")
    for p, what in ((weight, "weight"), (bias, "bias")):
        if p.kind == "const" and p.value is None:
            continue
        if p.kind != "param" or tuple(p.shape or ()) != out_shape[-ndims:]:
            raise NoMatch(f"the {kind} {what} is not a parameter of the normalised shape")
    if eps.kind != "const":
        raise NoMatch(f"the {kind} eps is not a number")
    if eps.value is None:  # rms_norm's default: the dtype's machine epsilon
        eps = const({"float16": 0.0009765625, "bfloat16": 0.0078125, "float64": 2.220446049250313e-16}
                    .get(x.dtype or "", 1.1920928955078125e-07))
    spec = {"x": x, "rms": kind == "rms_norm", "weight": weight if weight.kind == "param" else None,
            "bias": bias if bias.kind == "param" else None, "eps": eps, "ndims": ndims, "out_shape": out_shape,
            "consts": [eps], "axis": axis if axis is not None and axis != len(out_shape) - 1 else None}
    return Match("norm", kind + label, ctx, spec)


def _written_row_op(root: Expr, out_shape: tuple[int, ...], ctx: Context) -> Match:
    if root.kind == "op" and root.op in vocabulary.ROW_OPS:
        raise NoMatch("handled as a library call")
    leaves = leaves_of(root)
    inputs = [e for e in leaves if e.kind == "input"]
    if len(inputs) != 1 or tuple(inputs[0].shape or ()) != out_shape:
        raise NoMatch("not a function of one input of the output's shape")
    found = recognise(root, inputs[0], [e for e in leaves if e.kind == "param"])
    if found is None:
        raise NoMatch("not a written-out softmax, log_softmax, layer norm or RMS norm")
    x = float_leaf(found.x, "the input")
    if found.kind in ("softmax", "log_softmax"):
        return Match("softmax", found.kind + " (written out)", ctx,
                     {"x": x, "dim": found.dim, "log": found.kind == "log_softmax", "out_shape": out_shape})
    assert found.eps is not None
    return _norm_match(found.kind, x, found.weight or const(None), found.bias or const(None), found.eps, 1,
                       out_shape, ctx, " (written out)", axis=found.dim)


def _reduction(root: Expr, out_shape: tuple[int, ...], ctx: Context) -> Match:
    """A reduction of a forward input, or of a pointwise function of one (``prologue``:
    sum(x * x)), with pointwise ops of its result after it (``epilogue``: sqrt(.)): one
    read of x, one store. Fused only where the reduced dims are the last ones (rows)."""
    reds = [n for n in root.walk() if n.kind == "op" and n.op in vocabulary.REDUCTIONS]
    if len(reds) != 1:
        raise NoMatch("the output is not a sum, mean, max, min or logsumexp" if not reds
                      else f"{len(reds)} reductions (one per kernel here)")
    red = reds[0]
    if not red.attrs.get("values"):
        raise NoMatch(f"{red.name}: {red.op} returns values and indices")
    pro = red.args[0]
    x = pro if pro.is_leaf else _prologue_input(pro)
    x = float_leaf(x, f"the {red.op} input")
    if x.kind != "input":
        raise NoMatch(f"the {red.op} input is not a forward input")
    nd = len(x.shape or ())
    dim = red.attrs.get("dim")
    dims = tuple(range(nd)) if dim is None else tuple(sorted({_norm_dim(d, nd) for d in
                                                             (dim if isinstance(dim, (list, tuple)) else [dim])}))
    op = {"max": "amax", "min": "amin"}.get(red.op, red.op)
    keepdim = bool(red.attrs.get("keepdim")) and dim is not None
    fused = pro is not x or root is not red
    if fused:
        if op == "logsumexp":
            raise NoMatch("logsumexp with pointwise ops around it")
        if not dims or dims[-1] != nd - 1 or list(dims) != list(range(dims[0], nd)):
            raise NoMatch(f"pointwise ops around a {red.op} over dims {list(dims)} (fused only over the last dims)")
        if root is not red:
            check_elementwise(root, out_shape, {id(red)})
            if tuple(red.shape or ()) != tuple(out_shape) or leaves_of(root, {id(red)}):
                raise NoMatch(f"the ops after {red.name} read tensors other than its result")
    return Match("reduction", op, ctx, {"x": x, "op": op, "dims": dims, "keepdim": keepdim, "ndim": nd,
                                        "out_shape": out_shape, "prologue": pro if pro is not x else None,
                                        "red": red, "epilogue": root if root is not red else None})


def _prologue_input(pro: Expr) -> Expr:
    """The one forward input a pointwise chain reads at its own shape (constants aside)."""
    check_elementwise(pro, tuple(pro.shape or ()), set())
    found = leaves_of(pro)
    if len(found) != 1 or tuple(found[0].shape or ()) != tuple(pro.shape or ()):
        raise NoMatch("the reduction reads a pointwise chain of more than one tensor "
                      f"({', '.join(leaf.name for leaf in found)})")
    return found[0]


def _operand_views(e: Expr, what: str) -> tuple[Expr, int]:
    """The leaf under a chain of transposes of the last two dims, and how many there are."""
    swaps = 0
    while e.kind == "op" and e.op in ("t", "transpose", "permute", "identity", "cast"):
        if e.op in ("t", "transpose", "permute"):
            nd = len(e.args[0].shape or ())
            dims = tuple(d % nd for d in e.attrs.get("dims", ()))
            last_two = {nd - 2, nd - 1}
            if e.op == "permute":
                ok = list(dims) == [*range(nd - 2), nd - 1, nd - 2]
            else:
                ok = nd >= 2 and set(dims) == last_two
            if not ok:
                raise NoMatch(f"{what} is permuted other than by swapping its last two dims")
            swaps += 1
        e = e.args[0]
    return float_leaf(e, what), swaps % 2


def _matmul(root: Expr, out_shape: tuple[int, ...], ctx: Context) -> Match:
    mms = [n for n in root.walk() if n.kind == "op" and n.op == "matmul"]
    if len(mms) != 1:
        raise NoMatch("no matmul" if not mms else f"{len(mms)} matmuls (one per kernel here)")
    mm = mms[0]
    a, b = mm.args
    a_leaf, a_t = _operand_views(a, "the left matmul operand")
    b_leaf, b_t = _operand_views(b, "the right matmul operand")
    sa, sb = tuple(a.shape or ()), tuple(b.shape or ())
    vector = len(sb) == 1  # matrix @ vector: b is read as a (K, 1) matrix
    if len(sa) < 2 or (len(sb) < 2 and not vector):
        raise NoMatch("a vector on the left of a matmul is not covered")
    if len(sb) > 2 and sa[:-2] != sb[:-2]:
        raise NoMatch(f"batch dims of {list(sa)} @ {list(sb)} differ")
    mm_shape = tuple(mm.shape or ())
    if mm_shape != out_shape:
        raise NoMatch("the epilogue changes the matmul's shape")
    leaves = check_elementwise(root, out_shape, {id(mm)})
    kinds: dict[int, str] = {}
    nd = len(out_shape)
    for leaf in leaves:
        block = broadcast_block(tuple(leaf.shape or ()), out_shape)
        if vector:  # the output is one column: only whole-output and scalar operands make sense
            kind = {(0, -1): "scalar", (0, nd - 1): "full"}.get(block or (9, 9))
        else:
            kinds_by_block = {(0, -1): "scalar", (nd - 1, nd - 1): "col", (0, nd - 1): "full", (0, nd - 2): "row"}
            kind = kinds_by_block.get(block or (9, 9))
        if kind is None:
            raise NoMatch(f"epilogue operand {leaf.name} {list(leaf.shape or ())} is neither a scalar, a row of the "
                          "output's width, a column or the whole output")
        kinds[id(leaf)] = kind
    ops = [n.op for n in root.walk() if n.kind == "op" and n.op not in ("matmul", "t", "transpose", "permute",
                                                                         "identity", "cast")]
    kind = ("matvec" if vector else "matmul") + "".join(f" + {o}" for o in dict.fromkeys(ops))
    return Match("matmul", kind, ctx, {
        "root": root, "mm": mm, "a": a_leaf, "a_t": a_t, "b": b_leaf, "b_t": b_t, "a_shape": sa, "b_shape": sb,
        "batched": len(sb) > 2, "vector": vector, "leaves": leaves, "kinds": kinds, "out_shape": out_shape,
        "dtype": mm.dtype or a_leaf.dtype})


# -- tracing failed: a single op read from the op list ------------------------------------------------
_OPS_UNARY = {op: op for op in vocabulary.UNARY - {"identity"}}  # an aten op's name is the IR's


def _from_ops(analysis: dict[str, Any]) -> tuple[Expr | None, list[str]]:
    ops = set(analysis.get("ops") or {})
    inputs = analysis.get("inputs") or []
    params = analysis.get("parameters") or {}
    if len(inputs) != 1 or not isinstance(inputs[0], dict):
        return None, ["the op-list fallback needs exactly one tensor input"]
    shape, dtype = tuple(inputs[0]["shape"]), inputs[0]["dtype"]
    x = Expr("input", "x", shape=shape, dtype=dtype, ref="x", index=0)
    out_shape = tuple(analysis["outputs"][0]["shape"])
    nd = len(shape)

    def param(suffix: str, pshape: tuple[int, ...]) -> Expr:
        keys = [k for k, v in params.items() if k.split(".")[-1] == suffix and tuple(v["shape"]) == pshape]
        if len(keys) != 1:
            return const(None)
        return Expr("param", keys[0].replace(".", "_"), shape=pshape, dtype=params[keys[0]]["dtype"], ref=keys[0])

    if ops in ({"_softmax"}, {"softmax"}, {"_log_softmax"}, {"log_softmax"}) and out_shape == shape:
        op = "log_softmax" if "log" in next(iter(ops)) else "softmax"
        return Expr("op", op, op=op, args=(x,), attrs={"dim": -1}, shape=shape, dtype=dtype), []
    if ops <= {"native_layer_norm", "layer_norm"} and ops and out_shape == shape:
        d = (shape[-1],)
        return Expr("op", "layer_norm", op="layer_norm", args=(x, param("weight", d), param("bias", d), const(1e-5)),
                    attrs={"ndims": 1}, shape=shape, dtype=dtype), []
    if len(ops) == 1 and next(iter(ops)) in ("sum", "mean", "amax", "amin") and nd >= 1 \
            and out_shape in (shape[:-1], shape[:-1] + (1,)):
        op = next(iter(ops))
        return Expr("op", op, op=op, args=(x,), attrs={"dim": -1, "keepdim": out_shape == shape[:-1] + (1,),
                                                       "values": True}, shape=out_shape, dtype=dtype), []
    acts = ops - {"mm", "addmm", "add"}
    if ops & {"mm", "addmm"} and len(acts) <= 1 and acts <= set(_OPS_UNARY) and nd == 2:
        # a linear layer, then at most one activation: the likeliest order, which the judge verifies
        n = out_shape[-1]
        w = param("weight", (n, shape[-1]))
        if w.kind != "param":
            return None, ["no weight parameter of the matmul's shape"]
        wt = Expr("op", "weight_t", op="t", args=(w,), attrs={"dims": (0, 1)}, shape=(shape[-1], n), dtype=w.dtype)
        out = Expr("op", "mm", op="matmul", args=(x, wt), shape=out_shape, dtype=dtype)
        if ops & {"addmm", "add"}:
            b = param("bias", (n,))
            if b.kind != "param":
                return None, ["no bias parameter of the output's width"]
            out = Expr("op", "addmm", op="add", args=(out, b), shape=out_shape, dtype=dtype)
        for act in acts:
            out = Expr("op", act, op=_OPS_UNARY[act], args=(out,), shape=out_shape, dtype=dtype,
                       attrs={"approximate": "none"} if act == "gelu" else {})
        return out, []
    if len(ops) == 1 and next(iter(ops)) in _OPS_UNARY and out_shape == shape:
        op = _OPS_UNARY[next(iter(ops))]
        return Expr("op", op, op=op, args=(x,), attrs={"approximate": "none"} if op == "gelu" else {},
                    shape=shape, dtype=dtype), []
    return None, []

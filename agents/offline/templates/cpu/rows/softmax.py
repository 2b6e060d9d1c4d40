"""Softmax and log-softmax along one dim in C, then any matched elementwise epilogue.

The input is viewed as (outer, C, inner) with C the softmax dim. Along the last dim
(inner == 1) each OpenMP iteration owns a row and makes three vectorised passes over
it while it stays in cache: the max, then exp(x - max) written to the output while
summing it, then the scale by 1 / sum (log-softmax: x - max - log(sum), nothing stored
in the second pass). Along any other dim (softmax over the channels of a convolution's
output) nothing is transposed: an iteration owns IB neighbouring positions of the inner
dims of one outer index, keeps IB running maxima and sums, and makes the same three
passes over its C strided runs of IB contiguous values (C * IB values in cache), each
pass vectorised along the contiguous run. The epilogue (``sigmoid(softmax(x, 1))``) is
applied in the last pass, before the value's only final store.
"""

from __future__ import annotations

from typing import Any

from ...spaces import param_space
from ..common import c_doc, c_epilogue, helper_names, module_source, omp_schedule, require_float32, simd_pragma
from ..mathlib import prelude

PARAM_SPACE: list[dict[str, Any]] = param_space("cpu", "softmax")

_RESERVED = {"x", "y", "xr", "yr", "xo", "yo", "r", "c", "i", "o", "ob", "i0", "m", "s", "e", "f", "inv", "lse",
             "len", "at", "acc", "rows", "cols", "outer", "inner", "blocks", "C", "C1", "S1", "ch"}

ROWS = '''/* {what} of each row of a contiguous (rows, cols) matrix, then the epilogue.
   x, y: input and output rows; the sum of exponentials is accumulated in {acc}. */
void {name}_rows(const float* x, float* y, {extra}int64_t rows, int64_t cols, int64_t C1, int64_t S1{scalars}) {{
    #pragma omp parallel for {schedule} if(rows * cols >= KF_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {{
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        float m = -INFINITY;
        {simd_max}
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        {acc} s = 0;
        {simd_sum}
        for (int64_t c = 0; c < cols; c++) {{
            const float e = kf_exp(xr[c] - m);
{store_e}            s += e;
        }}
        const float f = {row_factor};
        {simd}
        for (int64_t c = 0; c < cols; c++) {{
            const int64_t at = r * cols + c;
            (void)at;
            const float acc = {row_value};
{epilogue}
            yr[c] = {result};
        }}
    }}
}}'''

STRIDED = '''/* {what} along the middle dim of a contiguous (outer, C, inner) tensor, then the epilogue.
   Each iteration: IB neighbouring inner positions of one outer index, C strided runs of them. */
void {name}_strided(const float* x, float* y, {extra}int64_t outer, int64_t C, int64_t inner, int64_t C1,
                    int64_t S1{scalars}) {{
    const int64_t blocks = (inner + {ib} - 1) / {ib};
    #pragma omp parallel for {schedule} if(outer * C * inner >= KF_PAR_MIN)
    for (int64_t ob = 0; ob < outer * blocks; ob++) {{
        const int64_t o = ob / blocks, i0 = (ob % blocks) * {ib};
        const int64_t len = inner - i0 < {ib} ? inner - i0 : {ib};
        const float* xo = x + o * C * inner + i0;
        float* yo = y + o * C * inner + i0;
        float m[{ib}], f[{ib}];
        {acc} s[{ib}];
        for (int64_t i = 0; i < len; i++) {{ m[i] = -INFINITY; s[i] = 0; }}
        for (int64_t c = 0; c < C; c++) {{
            const float* xr = xo + c * inner;
            {simd}
            for (int64_t i = 0; i < len; i++) m[i] = xr[i] > m[i] ? xr[i] : m[i];
        }}
        for (int64_t c = 0; c < C; c++) {{
            const float* xr = xo + c * inner;
            float* yr = yo + c * inner;
            (void)yr;
            {simd}
            for (int64_t i = 0; i < len; i++) {{
                const float e = kf_exp(xr[i] - m[i]);
{store_e_strided}                s[i] += e;
            }}
        }}
        for (int64_t i = 0; i < len; i++) f[i] = {strided_factor};
        for (int64_t c = 0; c < C; c++) {{
            const float* xr = xo + c * inner;
            float* yr = yo + c * inner;
            (void)xr;
            {simd}
            for (int64_t i = 0; i < len; i++) {{
                const int64_t at = (o * C + c) * inner + i0 + i;
                (void)at;
                const float acc = {strided_value};
{epilogue}
                yr[i] = {result};
            }}
        }}
    }}
}}'''

# (store of exp in the second pass, the per-row factor, the value before the epilogue)
_FORMS = {
    False: ("            yr[c] = e;\n", "(float)(1.0 / s)", "yr[c] * f",
            "                yr[i] = e;\n", "(float)(1.0 / s[i])", "yr[i] * f[i]"),
    True: ("", "m + (float)log((double)s)", "xr[c] - f",
           "", "m[i] + (float)log((double)s[i])", "xr[i] - f[i]"),
}


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    epilogue = spec.get("epilogue") or []  # its operands; the chain itself runs from spec["anchor"] to spec["root"]
    log, dim, shape = spec["log"], spec["dim"], tuple(spec["out_shape"])
    nd = len(shape)
    require_float32(match.ctx.outputs[0].get("dtype"), spec["x"].dtype, *(e.dtype for e in epilogue))
    name = "log_softmax" if log else "softmax"
    last = dim == nd - 1
    # the channel (dim 1) of the output element at flat index `at`; the softmax dim's own index where it is dim 1
    channel = "c" if dim == 1 else "((at / S1) % C1)"
    if spec.get("anchor") is not None:
        ep = c_epilogue(ctx, spec, spec["anchor"], {"scalar": "0", "channel": channel, "full": "at"}, _RESERVED,
                        like="out")
        operands, scalars, result = [o.strip(", ") for o in ep.operands], list(ep.scalars), ep.result
        body = "\n".join(("            " if last else "                ") + line for line in ep.statements)
        c_args, prep, forward_ops, scalar_args = ep.c_args, ep.prep, ep.forward_ops, list(ep.scalars.values())
    else:
        operands, scalars, result, body, c_args, prep, forward_ops, scalar_args = [], [], "acc", "", [], [], [], []
    store_e, row_factor, row_value, store_e_strided, strided_factor, strided_value = _FORMS[log]
    fmt = dict(name=name, acc=params["acc"], schedule=omp_schedule(params), ib=int(params.get("IB", 128)),
               what="log(softmax(x)) = x - max - log(sum(exp(x - max)))" if log else
               "softmax(x) = exp(x - max) / sum(exp(x - max))",
               simd_max=simd_pragma(params, "reduction(max:m)"), simd_sum=simd_pragma(params, "reduction(+:s)"),
               simd=simd_pragma(params), store_e=store_e, row_factor=row_factor, row_value=row_value,
               store_e_strided=store_e_strided, strided_factor=strided_factor, strided_value=strided_value,
               extra="".join(f"{a}, " for a in c_args), scalars="".join(f", float {s}" for s in scalars),
               epilogue=body, result=result)
    kernel = (ROWS if last else STRIDED).format(**fmt)
    fn = f"{name}_{'rows' if last else 'strided'}"
    sizes = "int64_t rows, int64_t cols" if last else "int64_t outer, int64_t C, int64_t inner"
    c_fn = f"void {fn}(const float* x, float* y, {fmt['extra']}{sizes}, int64_t C1, int64_t S1{fmt['scalars']})"
    extra = "".join(f", {v}: torch.Tensor" for v in operands) + "".join(f", {s}: float" for s in scalars)
    dims = ("out.numel() // x.shape[-1], x.shape[-1]" if last else
            f"math.prod(x.shape[:{dim}]), x.shape[{dim}], math.prod(x.shape[{dim} + 1:])")
    host = [f"def {name}(x: torch.Tensor{extra}) -> torch.Tensor:",
            f'    """{name} along dim {dim}, then the epilogue; no transposed copy."""',
            "    x = x.contiguous()",
            "    out = torch.empty_like(x)",
            *(line.rstrip("\n") for line in prep),
            "    if out.numel():",
            "        c1 = x.shape[1] if x.dim() > 1 else 1",
            f"        lib.{fn}(x, out, {''.join(v + ', ' for v in operands)}{dims}, c1, "
            f"max(1, math.prod(x.shape[2:])){''.join(', ' + s for s in scalars)})",
            "    return out"]
    doc = c_doc(f"{match.kind} along dim {dim}", params)
    call = [ctx.forward_arg(spec["x"].index), *forward_ops, *scalar_args]
    return module_source(doc, prelude(helper_names(kernel) | {"kf_exp"}) + "\n\n" + kernel, [c_fn], name,
                         ["\n".join(host)], ctx, [f"return {name}({', '.join(call)})"], uses_math=True)

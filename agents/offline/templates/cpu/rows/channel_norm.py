"""Batch, instance and group norm in C, with the statistics the reference computes in
training mode: mean and (biased) variance, in double, from one read of the values --
sums of d and d^2 with d = x - k, k the run's first value (the shifted sums: no
cancellation for data far from 0, var = E[d^2] - E[d]^2 in double); then one pass
writing (x - mean) / sqrt(var + eps), times the channel's weight, plus its bias, then
the matched elementwise epilogue, before the value's only store. Two reads and a write
(a centred second pass over the values made it three reads).

The input is (N, C, S) with S the flattened spatial dims. Group / instance norm: each
OpenMP iteration owns one (sample, group), a contiguous run of C/G * S values
(instance: G = C). Batch norm: each iteration owns one channel, walking its N rows of S;
over (N, C) rows (S == 1, BatchNorm1d after a GEMM) a block of CB columns instead, read
row by row (a channel's values are C floats apart).
"""

from __future__ import annotations

from typing import Any

from ...settings import setting_expr
from ...spaces import param_space
from ..common import INLINE, c_epilogue, helper_names, module_source, omp_schedule, require_float32, simd_pragma
from ..mathlib import prelude

_RESERVED = {"x", "w", "y", "xr", "yr", "r", "k", "c", "s", "n", "sum", "sq", "mean", "k0", "k0s", "dm", "var", "inv",
             "m", "scale", "shift", "len", "cg", "d", "N", "C", "S", "G", "eps", "at", "acc", "c0", "c1", "j", "sums",
             "sqs", "scales", "shifts"}
# Columns per OpenMP iteration of a batch norm over (N, C) rows (S == 1).
COLUMN_BLOCK = 64

# A pipeline may hand this stage a dead input to write over (templates/pipeline.py: ``donated``):
# every value is read before its own store, and the statistics before any store.
DONATES = True
FRESH_OUTPUT = True

PARAM_SPACE: list[dict[str, Any]] = param_space("cpu", "channel_norm")

GROUPS = '''/* Per (sample, group): statistics over its C/G channels of S values, then the affine per channel. */
void group_norm(const float* x, const float* w, const float* b, float* y, {extra}int64_t N, int64_t C, int64_t S,
                int64_t G, double eps{scalars}) {{
    const int64_t cg = C / G, len = cg * S;
    #pragma omp parallel for {schedule} if(N * C * S > {par_min})
    for (int64_t r = 0; r < N * G; r++) {{
        const float* xr = x + r * len;
        float* yr = y + r * len;
        const double k0 = len ? xr[0] : 0.0;
        double sum = 0, sq = 0;
        {simd_both}
        for (int64_t i = 0; i < len; i++) {{ const double d = xr[i] - k0; sum += d; sq += d * d; }}
        const double dm = sum / len, mean = k0 + dm, var = sq / len - dm * dm;
        const float inv = (float)(1.0 / sqrt((var > 0 ? var : 0) + eps)), m = (float)mean;
        for (int64_t k = 0; k < cg; k++) {{
            const int64_t c = (r % G) * cg + k;
            const float scale = inv * w[c], shift = b[c] - m * scale;
            {simd}
            for (int64_t s = 0; s < S; s++) {{
                const int64_t at = r * len + k * S + s;
                (void)at;
                const float acc = xr[k * S + s] * scale + shift;
{epilogue}
                yr[k * S + s] = {result};
            }}
        }}
    }}
}}'''

BATCH = '''/* Per channel: statistics over the N samples' S values, then the channel's affine. */
void batch_norm(const float* x, const float* w, const float* b, float* y, {extra}int64_t N, int64_t C, int64_t S,
                int64_t G, double eps{scalars}) {{
    (void)G;
    if (S == 1) {{
        /* (N, C) rows: a channel is a column, C floats apart. Walking one column at a time
           would fetch a cache line per value; each iteration instead owns a block of CB
           columns and reads the rows' CB consecutive values, three passes (sum, centred
           squares, the writing pass). */
        #pragma omp parallel for {schedule} if(N * C > {par_min})
        for (int64_t c0 = 0; c0 < C; c0 += {cb}) {{
            const int64_t c1 = C - c0 < {cb} ? C : c0 + {cb};
            double k0s[{cb}], sums[{cb}], sqs[{cb}];
            float scales[{cb}], shifts[{cb}];
            for (int64_t j = 0; j < c1 - c0; j++) {{ k0s[j] = x[c0 + j]; sums[j] = 0; sqs[j] = 0; }}
            for (int64_t n = 0; n < N; n++) {{
                const float* xr = x + n * C + c0;
                {simd}
                for (int64_t j = 0; j < c1 - c0; j++) {{ const double d = xr[j] - k0s[j]; sums[j] += d; sqs[j] += d * d; }}
            }}
            for (int64_t j = 0; j < c1 - c0; j++) {{
                const double dm = sums[j] / N, var = sqs[j] / N - dm * dm;
                const float inv = (float)(1.0 / sqrt((var > 0 ? var : 0) + eps));
                scales[j] = inv * w[c0 + j];
                shifts[j] = b[c0 + j] - (float)(k0s[j] + dm) * scales[j];
            }}
            for (int64_t n = 0; n < N; n++) {{
                const float* xr = x + n * C + c0;
                float* yr = y + n * C + c0;
                {simd}
                for (int64_t j = 0; j < c1 - c0; j++) {{
                    const int64_t c = c0 + j, at = n * C + c;
                    (void)at;
                    const float acc = xr[j] * scales[j] + shifts[j];
{epilogue}
                    yr[j] = {result};
                }}
            }}
        }}
        return;
    }}
    #pragma omp parallel for {schedule} if(N * C * S > {par_min})
    for (int64_t c = 0; c < C; c++) {{
        const double k0 = N * S ? x[c * S] : 0.0;
        double sum = 0, sq = 0;
        for (int64_t n = 0; n < N; n++) {{
            const float* xr = x + (n * C + c) * S;
            {simd_both}
            for (int64_t s = 0; s < S; s++) {{ const double d = xr[s] - k0; sum += d; sq += d * d; }}
        }}
        const double dm = sum / (N * S), var = sq / (N * S) - dm * dm;
        const float inv = (float)(1.0 / sqrt((var > 0 ? var : 0) + eps));
        const float scale = inv * w[c], shift = b[c] - (float)(k0 + dm) * scale;
        for (int64_t n = 0; n < N; n++) {{
            const float* xr = x + (n * C + c) * S;
            float* yr = y + (n * C + c) * S;
            {simd}
            for (int64_t s = 0; s < S; s++) {{
                const int64_t at = (n * C + c) * S + s;
                (void)at;
                const float acc = xr[s] * scale + shift;
{epilogue}
                yr[s] = {result};
            }}
        }}
    }}
}}'''


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    weight, bias = spec["weight"], spec["bias"]
    require_float32(match.ctx.outputs[0].get("dtype"), spec["x"].dtype, *(p.dtype for p in (weight, bias) if p),
                    *(e.dtype for e in spec["epilogue"]))
    kind = spec["kind"]
    over = ctx.forward_arg(spec["x"].index) in params.get("donated", ())
    fn = "batch_norm" if kind == "batch" else "group_norm"
    ep = c_epilogue(ctx, spec, spec["norm"], {"scalar": "0", "channel": "c", "full": "at"}, _RESERVED, like="out")
    operands = [o.strip(", ") for o in ep.operands]
    scalars = list(ep.scalars)
    body = "\n".join(f"                {line}" for line in ep.statements)
    fmt = dict(schedule=omp_schedule(params), par_min=params["par_min"], simd=simd_pragma(params),
               simd_both=simd_pragma(params, "reduction(+:sum, sq)"),
               extra="".join(f"{a}, " for a in ep.c_args),
               scalars="".join(f", float {s}" for s in scalars), epilogue=body, result=ep.result,
               cb=params.get("CB", COLUMN_BLOCK))
    kernel = (BATCH if kind == "batch" else GROUPS).format(**fmt)
    proto = (f"void {fn}(const float* x, const float* w, const float* b, float* y, {fmt['extra']}int64_t N, "
             f"int64_t C, int64_t S, int64_t G, double eps{fmt['scalars']})")
    groups = "x.shape[1]" if kind == "instance" else "1" if kind == "batch" else "groups"
    extra = "".join(f", {v}: torch.Tensor" for v in operands) + "".join(f", {s}: float" for s in scalars)
    host = [f"def {kind}_norm(x: torch.Tensor, weight, bias, groups: int, eps: float{extra}) -> torch.Tensor:",
            f'    """{kind} norm of (N, C, ...) with training-mode statistics; weight / bias may be None."""',
            "    x = x.contiguous()",
            "    out = x  # written over: x is dead after this stage" if over else
            "    out = scratch.empty(x.shape, dtype=x.dtype)",
            "    weight = torch.ones(x.shape[1], dtype=x.dtype) if weight is None else weight.contiguous()",
            "    bias = torch.zeros(x.shape[1], dtype=x.dtype) if bias is None else bias.contiguous()",
            *(line.rstrip("\n") for line in ep.prep),
            "    if out.numel():",
            f"        lib.{fn}(x, weight, bias, out, {''.join(v + ', ' for v in operands)}x.shape[0], x.shape[1], "
            f"math.prod(x.shape[2:]), {groups}, float(eps){''.join(', ' + s for s in scalars)})",
            "    return out"]
    w = ctx.param_access(weight.ref) if weight else "None"
    b = ctx.param_access(bias.ref) if bias else "None"
    g = setting_expr(ctx, spec["groups"]) if spec["groups"] is not None else "1"
    eps = ctx.scalar(spec["eps"])
    eps_expr = eps[1] if eps else repr(float(spec["eps"].value))
    call = [ctx.forward_arg(spec["x"].index), w, b, g, eps_expr, *ep.forward_ops, *ep.scalars.values()]
    knobs = ", ".join(f"{k}={v}" for k, v in params.items() if k != "donated") + \
        (f"; writes over its input {ctx.forward_arg(spec['x'].index)}, dead after it" if over else "")
    doc = (f"{match.kind} (training-mode statistics) in C (offline engine, no LLM, backend cpu).\n\n"
           f"Parameters: {knobs}.\n")
    return module_source(doc, prelude(helper_names(kernel)) + "\n\n" + INLINE + "\n\n" + kernel, [proto], fn,
                         ["\n".join(host)], ctx, [f"return {kind}_norm({', '.join(call)})"], uses_math=True)

"""Scaled dot-product attention in C: one pass over the keys with an online softmax
(flash-attention's recurrence), never materialising the (L, S) score matrix.

One OpenMP iteration owns one query row of one (batch, head): the keys are taken BN
at a time, their scores (vector dot products over E) kept in a BN-wide buffer, the
running maximum m and denominator l rescaled once per block, and the output row -- the
running sum of p * v -- rescaled with them. A block's weights are computed in one vector
loop over the buffer: with a narrow head (E = 4: ViT-style attention at small widths) the
exponentials, one per key, are most of the work. Causal attention stops at key i (torch's
``is_causal``: the top-left aligned lower triangle).

ReLU attention (``relu(q k^T * scale) v``, unnormalised) is the same walk without the
softmax: a score's weight is ``max(score, 0)`` (NaN kept, as torch's relu keeps it), and a
key whose weight is 0 adds nothing, so its row of v is skipped.
"""

from __future__ import annotations

from typing import Any

from ...attention_mask import checked
from ...spaces import param_space
from ..common import module_source, omp_schedule, require_float32, simd_pragma
from ..mathlib import prelude

PARAM_SPACE: list[dict[str, Any]] = param_space("cpu", "attention")

def _row_head(fn: str, state: str = "") -> str:
    """A kernel's signature and its walk down to one query row's key loop: one OpenMP iteration per
    (batch, query row), the row's pointers, the scores' block, the output row zeroed, the causal end."""
    return (f"void {fn}(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t L, "
            "int64_t S,\n    int64_t E, int64_t Ev, float scale, int64_t causal) {{\n" + '''\
    #pragma omp parallel for collapse(2) {schedule} if(B * L * S * (E + Ev) > {par_min})
    for (int64_t b = 0; b < B; b++)
    for (int64_t i = 0; i < L; i++) {{
        const float* qi = q + (b * L + i) * E;
        const float* kb = k + b * S * E;
        const float* vb = v + b * S * Ev;
        float* o = out + (b * L + i) * Ev;
        float s[{BN}];
''' + (f"        {state}\n" if state else "") + '''        for (int64_t e = 0; e < Ev; e++) o[e] = 0.0f;
        const int64_t end = causal && i + 1 < S ? i + 1 : S;
''')


KERNEL = '''#define NARROW 8  /* heads this narrow or narrower: vectors over keys, not over the head */
/* out[b, i, :] = softmax_j(q[b, i, :] . k[b, j, :] * scale) v[b, j, :] over contiguous
   q (B, L, E), k (B, S, E), v (B, S, Ev); keys j <= i only when causal. Keys BN at a time. */
''' + _row_head("attention", "float m = -INFINITY, l = 0.0f;") + '''        for (int64_t j0 = 0; j0 < end; j0 += {BN}) {{
            const int64_t nj = end - j0 < {BN} ? end - j0 : {BN};
            float bm = -INFINITY;
            if (E <= NARROW) {{  /* a narrow head: the vector runs over the block's keys */
                for (int64_t jj = 0; jj < nj; jj++) s[jj] = 0.0f;
                for (int64_t e = 0; e < E; e++) {{
                    const float qe = qi[e];
                    const float* ke = kb + j0 * E + e;
                    {simd}
                    for (int64_t jj = 0; jj < nj; jj++) s[jj] += qe * ke[jj * E];
                }}
                {simd_max}
                for (int64_t jj = 0; jj < nj; jj++) {{
                    s[jj] *= scale;
                    bm = s[jj] > bm ? s[jj] : bm;
                }}
            }} else {{
                for (int64_t jj = 0; jj < nj; jj++) {{
                    const float* kj = kb + (j0 + jj) * E;
                    float dot = 0.0f;
                    {simd_dot}
                    for (int64_t e = 0; e < E; e++) dot += qi[e] * kj[e];
                    s[jj] = dot * scale;
                    bm = s[jj] > bm ? s[jj] : bm;
                }}
            }}
            const float mn = m > bm ? m : bm;
            const float corr = kf_exp(m - mn);  /* 0 on the first block (m = -inf) */
            l *= corr;
            {simd}
            for (int64_t e = 0; e < Ev; e++) o[e] *= corr;
            /* the block's weights in one vector loop (kf_exp is branch-free), then their rows of v */
            float bl = 0.0f;
            {simd_sum}
            for (int64_t jj = 0; jj < nj; jj++) {{
                s[jj] = kf_exp(s[jj] - mn);
                bl += s[jj];
            }}
            l += bl;
            if (Ev <= NARROW) {{
                for (int64_t e = 0; e < Ev; e++) {{
                    const float* ve = vb + j0 * Ev + e;
                    float acc = 0.0f;
                    {simd_acc}
                    for (int64_t jj = 0; jj < nj; jj++) acc += s[jj] * ve[jj * Ev];
                    o[e] += acc;
                }}
            }} else {{
                for (int64_t jj = 0; jj < nj; jj++) {{
                    const float p = s[jj];
                    const float* vj = vb + (j0 + jj) * Ev;
                    {simd}
                    for (int64_t e = 0; e < Ev; e++) o[e] += p * vj[e];
                }}
            }}
            m = mn;
        }}
        const float inv = 1.0f / l;
        {simd}
        for (int64_t e = 0; e < Ev; e++) o[e] *= inv;
    }}
}}'''

RELU_KERNEL = '''/* out[b, i, :] = sum_j relu(q[b, i, :] . k[b, j, :] * scale) v[b, j, :] over contiguous
   q (B, L, E), k (B, S, E), v (B, S, Ev); keys j <= i only when causal. Keys BN at a time. */
''' + _row_head("relu_attention") + '''        for (int64_t j0 = 0; j0 < end; j0 += {BN}) {{
            const int64_t nj = end - j0 < {BN} ? end - j0 : {BN};
            for (int64_t jj = 0; jj < nj; jj++) {{
                const float* kj = kb + (j0 + jj) * E;
                float dot = 0.0f;
                {simd_dot}
                for (int64_t e = 0; e < E; e++) dot += qi[e] * kj[e];
                const float x = dot * scale;
                s[jj] = x < 0.0f ? 0.0f : x;  /* NaN stays NaN */
            }}
            for (int64_t jj = 0; jj < nj; jj++) {{
                const float p = s[jj];
                if (p == 0.0f) continue;
                const float* vj = vb + (j0 + jj) * Ev;
                {simd}
                for (int64_t e = 0; e < Ev; e++) o[e] += p * vj[e];
            }}
        }}
    }}
}}'''

PROTO = ("void attention(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t L, "
         "int64_t S, int64_t E, int64_t Ev, float scale, int64_t causal)")

RELU_PROTO = PROTO.replace("void attention(", "void relu_attention(")

HOST = '''def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale, causal: bool) -> torch.Tensor:
    """softmax(q k^T * scale) v over the last two dims (scale None: 1 / sqrt(E))."""
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    L, E, S, Ev = q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
    out = torch.empty(*q.shape[:-1], Ev, dtype=q.dtype, device=q.device)
    if out.numel() == 0:
        return out
    scale = 1.0 / math.sqrt(E) if scale is None else float(scale)
    lib.attention(q, k, v, out, q.numel() // (L * E), L, S, E, Ev, scale, int(causal))
    return out
'''

RELU_HOST = HOST.replace("def attention(", "def relu_attention(").replace(
    '"""softmax(q k^T * scale) v', '"""relu(q k^T * scale) v').replace("lib.attention(", "lib.relu_attention(")


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    q, k, v = spec["q"], spec["k"], spec["v"]
    require_float32(match.ctx.outputs[0].get("dtype"), q.dtype, k.dtype, v.dtype)
    relu = spec.get("weights") == "relu"
    kernel = (RELU_KERNEL if relu else KERNEL).format(
        BN=int(params["BN"]), schedule=omp_schedule(params), par_min=int(params["par_min"]),
        simd=simd_pragma({}), simd_dot=simd_pragma({}, "reduction(+:dot)"),
        simd_sum=simd_pragma({}, "reduction(+:bl)"), simd_max=simd_pragma({}, "reduction(max:bm)"),
        simd_acc=simd_pragma({}, "reduction(+:acc)"))
    knobs = ", ".join(f"{key}={val}" for key, val in params.items())
    how = "ReLU weights over key blocks" if relu else "online softmax over key blocks"
    doc = f"{match.kind} in C, {how} (offline engine, no LLM, backend cpu).\n\nParameters: {knobs}.\n"
    fn = "relu_attention" if relu else "attention"
    call = f"return {fn}({ctx.leaf_arg(q)}, {ctx.leaf_arg(k)}, {ctx.leaf_arg(v)}, {spec['scale']!r}, " \
           f"{spec['causal']!r})"
    body, extra = checked(spec, ctx, call)
    return module_source(doc, prelude(set() if relu else {"kf_exp"}) + "\n\n" + kernel,
                         [RELU_PROTO if relu else PROTO], fn, [RELU_HOST if relu else HOST, *extra], ctx, body,
                         uses_math=True)

"""Recurrent layers in C: ``nn.LSTM``, ``nn.GRU`` and ``nn.RNN`` (tanh or relu), any
number of layers, one or two directions, batch first or time first.

Per layer and direction, two calls. ``rnn_project`` multiplies every step's input by
the input weights at once (one threaded sgemm over all T x B rows: oneDNN's, or
OpenBLAS's in the ``gemm: blas`` variant). ``rnn_steps`` then walks the steps in order
(backwards for the reverse direction) in one OpenMP parallel region. Each thread owns a
run of 16-unit blocks of the hidden state; it packs those units' rows of the hidden
weights once per call (per gate, k-major panels of 16 columns) and sums their biases,
then each step multiplies the state by its panels with a register tile of up to 6 rows x
16 units (12 vector accumulators over the H products, the panel in L1 across the row
tiles) and runs the gates, the cell and the new state over its units (vectorised
``kf_sigmoid`` / ``kf_tanh``, the biases added here, no pass of their own); the threads
meet once a step, the state double-buffered (B, H) x 2. Library sgemm calls per step
repacked the weights every step (OpenBLAS: 0.45x of eager's oneDNN LSTM at
KernelBench's 35_LSTM sizes; packed once, 1.2x). The step's output is written to the
layer's output at the direction's column offset. Rows are in the input's own order
(b * T + t when batch first, else t * B + b), so every layer's output is already in the
layout the module returns. Gate order and equations are torch's: LSTM i, f, g, o; GRU
r, z, n with the n gate's hidden bias inside r * (...).
"""

from __future__ import annotations

from typing import Any

from ...common import recurrent_call
from ...spaces import param_space
from ..common import module_source
from ..mathlib import prelude

PARAM_SPACE: list[dict[str, Any]] = param_space("cpu", "recurrent")

# The input product's library: oneDNN's sgemm (row major) or OpenBLAS's.
GEMM = {
    "dnnl": {"gemm_include": "#include <oneapi/dnnl/dnnl.h>",
             "gemm_call": "dnnl_sgemm('N', 'T', rows, GH, n_in, 1.0f, x, n_in, w_ih, n_in, 0.0f, xw, GH);"},
    "blas": {"gemm_include": "#include <cblas.h>",
             "gemm_call": "cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)rows, (blasint)GH, "
                          "(blasint)n_in, 1.0f,\n                x, (blasint)n_in, w_ih, (blasint)n_in, 0.0f, xw, (blasint)GH);"},
}

KERNEL = '''{gemm_include}
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* xw (rows, GH) = x (rows, n_in) . w_ih^T: every step's input product at once (the biases are
   added where the gates are computed, no pass of their own). */
void rnn_project(const float* x, const float* w_ih, float* xw, int64_t rows, int64_t n_in, int64_t GH) {{
    {gemm_call}
}}

/* The recurrent product in blocks of 16 hidden units. w_hh is packed once per call, block by
   block and gate by gate, k-major: panel (u, q) holds rows q * H + 16 u .. + 15 of w_hh as
   (H, 16), zeros past H. A tile is up to 6 state rows x 16 units: 12 vector accumulators
   held in registers over the H products, two loads of the panel and one broadcast per row a k. */
typedef float kf_v8 __attribute__((vector_size(32)));
static inline kf_v8 kf_ld8(const float* p) {{ kf_v8 v; memcpy(&v, p, sizeof v); return v; }}
static inline void kf_st8(float* p, kf_v8 v) {{ memcpy(p, &v, sizeof v); }}

static inline __attribute__((always_inline)) void kf_tile(const float* h, int64_t H, const float* panel,
                                                          float* acc, int64_t ldc, const int rows) {{
    kf_v8 a0[6], a1[6];
    #pragma GCC unroll 6
    for (int r = 0; r < 6; r++) {{ a0[r] = (kf_v8){{0}}; a1[r] = (kf_v8){{0}}; }}
    for (int64_t k = 0; k < H; k++) {{
        const kf_v8 w0 = kf_ld8(panel + k * 16), w1 = kf_ld8(panel + k * 16 + 8);
        #pragma GCC unroll 6
        for (int r = 0; r < 6; r++)
            if (r < rows) {{ const float s = h[r * H + k]; a0[r] += s * w0; a1[r] += s * w1; }}
    }}
    #pragma GCC unroll 6
    for (int r = 0; r < 6; r++)
        if (r < rows) {{ kf_st8(acc + r * ldc, a0[r]); kf_st8(acc + r * ldc + 8, a1[r]); }}
}}

static void kf_tile_rows(const float* h, int64_t H, const float* panel, float* acc, int64_t ldc, int64_t rows) {{
    switch (rows) {{
        case 1: kf_tile(h, H, panel, acc, ldc, 1); break;
        case 2: kf_tile(h, H, panel, acc, ldc, 2); break;
        case 3: kf_tile(h, H, panel, acc, ldc, 3); break;
        case 4: kf_tile(h, H, panel, acc, ldc, 4); break;
        case 5: kf_tile(h, H, panel, acc, ldc, 5); break;
        default: kf_tile(h, H, panel, acc, ldc, 6); break;
    }}
}}

static void kf_pack(const float* w_hh, float* packed, int64_t H, int64_t G, int64_t u0, int64_t u1) {{
    for (int64_t u = u0; u < u1; u++)
        for (int64_t q = 0; q < G; q++) {{
            float* panel = packed + (u * G + q) * H * 16;
            for (int64_t k = 0; k < H; k++)
                for (int64_t jj = 0; jj < 16; jj++) {{
                    const int64_t j = u * 16 + jj;
                    panel[k * 16 + jj] = j < H ? w_hh[(q * H + j) * H + k] : 0.0f;
                }}
        }}
}}

/* Step t for one thread's units [j0, j1) (unit blocks [u0, u1)): each gate's panel times every
   row of the state, in tiles of at most 6 rows of equal size (a panel, 16 H floats, stays in L1
   across the tiles), into acc (G, B, j1 - j0); then the cell for every row over those units at
   once. bias: (G, H) here, b_ih + b_hh, a GRU's n gate b_ih only (its b_hh is inside r * (...)). */
static void kf_units(const float* xw, const float* packed, const float* bias, const float* b_hh,
                     const float* h_in, float* h_out, float* c, float* out, float* acc, int64_t t, int64_t T,
                     int64_t B, int64_t H, int64_t G, int64_t out_cols, int64_t out_off, int64_t batch_first,
                     int64_t cell, int64_t u0, int64_t u1) {{
    const int64_t GH = G * H, j0 = u0 * 16, j1 = u1 * 16 < H ? u1 * 16 : H, U = (u1 - u0) * 16, gs = B * U;
    const int64_t tiles = (B + 5) / 6, per = (B + tiles - 1) / tiles;
    for (int64_t u = u0; u < u1; u++)
        for (int64_t q = 0; q < G; q++)
            for (int64_t b0 = 0; b0 < B; b0 += per)
                kf_tile_rows(h_in + b0 * H, H, packed + (u * G + q) * H * 16, acc + q * gs + b0 * U + (u - u0) * 16,
                             U, B - b0 < per ? B - b0 : per);
    for (int64_t b = 0; b < B; b++) {{
        const int64_t row = batch_first ? b * T + t : t * B + b;
        const float* g = xw + row * GH;
        const float* hp = h_in + b * H;
        float* hb = h_out + b * H;
        float* o = out + row * out_cols + out_off;
        const float* a = acc + b * U - j0;  /* a[q * gs + j]: gate q's product for unit j */
        if (cell == 0) {{
            float* cb = c + b * H;
            #pragma omp simd
            for (int64_t j = j0; j < j1; j++) {{
                const float ig = kf_sigmoid(g[j] + a[j] + bias[j]);
                const float fg = kf_sigmoid(g[H + j] + a[gs + j] + bias[H + j]);
                const float gg = kf_tanh(g[2 * H + j] + a[2 * gs + j] + bias[2 * H + j]);
                const float og = kf_sigmoid(g[3 * H + j] + a[3 * gs + j] + bias[3 * H + j]);
                const float cc = fg * cb[j] + ig * gg;
                cb[j] = cc;
                hb[j] = og * kf_tanh(cc);
                o[j] = hb[j];
            }}
        }} else if (cell == 1) {{
            #pragma omp simd
            for (int64_t j = j0; j < j1; j++) {{
                const float r = kf_sigmoid(g[j] + a[j] + bias[j]);
                const float z = kf_sigmoid(g[H + j] + a[gs + j] + bias[H + j]);
                const float nn = kf_tanh(g[2 * H + j] + bias[2 * H + j] + r * (a[2 * gs + j] + (b_hh ? b_hh[2 * H + j] : 0.0f)));
                hb[j] = (1.0f - z) * nn + z * hp[j];
                o[j] = hb[j];
            }}
        }} else {{
            #pragma omp simd
            for (int64_t j = j0; j < j1; j++) {{
                const float v = g[j] + a[j] + bias[j];
                hb[j] = cell == 2 ? kf_tanh(v) : (v > 0.0f ? v : (v != v ? v : 0.0f));
                o[j] = hb[j];
            }}
        }}
    }}
}}

/* Every step of one layer in one direction. h0 / c0: (B, H) or NULL (zeros); h: (2, B, H), the
   state before and after a step by turns; c: (B, H); packed: (ceil(H / 16), G, H, 16); bias: (G, H). out: the
   layer's output rows of out_cols floats, this direction's H columns from out_off; hn / cn: (B, H),
   the state after the last step. cell: 0 LSTM, 1 GRU, 2 RNN tanh, 3 RNN relu. One parallel region
   for all the steps: each thread owns a run of unit blocks (packs their panels, writes their
   columns of the state) and the threads meet once a step, where the next step's product needs
   the whole state. */
void rnn_steps(const float* xw, const float* w_hh, const float* b_ih, const float* b_hh, const float* h0,
               const float* c0, float* out, float* hn, float* cn, float* h, float* c, float* packed, float* bias,
               int64_t T, int64_t B, int64_t H, int64_t G, int64_t out_cols, int64_t out_off, int64_t batch_first,
               int64_t reverse, int64_t cell) {{
    if (h0) memcpy(h, h0, (size_t)(B * H) * sizeof(float)); else memset(h, 0, (size_t)(B * H) * sizeof(float));
    if (cell == 0) {{
        if (c0) memcpy(c, c0, (size_t)(B * H) * sizeof(float)); else memset(c, 0, (size_t)(B * H) * sizeof(float));
    }}
    const int64_t nb = (H + 15) / 16;
    #pragma omp parallel if(B * G * H * H > {par_min})
    {{
        const int64_t nt = omp_get_num_threads(), me = omp_get_thread_num();
        const int64_t u0 = nb * me / nt, u1 = nb * (me + 1) / nt;
        /* this thread's products (G, B, its units) and its units' summed biases */
        float* acc = (float*)malloc((size_t)(G * B * (u1 - u0) * 16) * sizeof(float));
        for (int64_t q = 0; q < G; q++)
            for (int64_t j = u0 * 16; j < u1 * 16 && j < H; j++)
                bias[q * H + j] = (b_ih ? b_ih[q * H + j] : 0.0f) + (b_hh && !(cell == 1 && q == 2) ? b_hh[q * H + j] : 0.0f);
        kf_pack(w_hh, packed, H, G, u0, u1);
        for (int64_t s = 0; s < T; s++) {{
            const int64_t t = reverse ? T - 1 - s : s;
            const float* h_in = h + (s % 2) * B * H;
            float* h_out = h + ((s + 1) % 2) * B * H;
            kf_units(xw, packed, bias, b_hh, h_in, h_out, c, out, acc, t, T, B, H, G, out_cols, out_off, batch_first,
                     cell, u0, u1);
            #pragma omp barrier
        }}
        free(acc);
    }}
    memcpy(hn, h + (T % 2) * B * H, (size_t)(B * H) * sizeof(float));
    if (cell == 0 && cn) memcpy(cn, c, (size_t)(B * H) * sizeof(float));
}}'''

PROTOS = [
    "void rnn_project(const float* x, const float* w_ih, float* xw, int64_t rows, int64_t n_in, int64_t GH)",
    "void rnn_steps(const float* xw, const float* w_hh, const float* b_ih, const float* b_hh, const float* h0, "
    "const float* c0, float* out, float* hn, float* cn, float* h, float* c, float* packed, float* bias, int64_t T, "
    "int64_t B, int64_t H, int64_t G, int64_t out_cols, int64_t out_off, int64_t batch_first, int64_t reverse, int64_t cell)",
]

HOST = '''def recurrent(x: torch.Tensor, h0: torch.Tensor | None, c0: torch.Tensor | None,
              weights: list[tuple[torch.Tensor, ...]]) -> torch.Tensor:
    """{what}: {layers} layer(s) x {directions} direction(s), gates {gates}; returns the {select}.
    weights: per layer and direction (w_ih, w_hh, b_ih, b_hh), a missing bias as None."""
    x = x.contiguous()
    none = torch.empty(0)
    T, B = {steps}
    H = weights[0][1].shape[1]
    L, D, G = {layers}, {directions}, {gates}
    h0 = none if h0 is None else h0.contiguous()
    c0 = none if c0 is None else c0.contiguous()
    hn = torch.empty(L * D, B, H)
    cn = torch.empty(L * D, B, H) if G == 4 else none
    h, c = torch.empty(2, B, H), torch.empty(B, H)
    packed, bias = torch.empty((H + 15) // 16, G, H, 16), torch.empty(G, H)
    inp, out = x, x
    for layer in range(L):
        out = torch.empty(x.shape[0], x.shape[1], D * H)
        for d in range(D):
            w_ih, w_hh, b_ih, b_hh = weights[layer * D + d]
            b_ih = none if b_ih is None else b_ih
            b_hh = none if b_hh is None else b_hh
            xw = torch.empty(x.shape[0], x.shape[1], G * H)
            lib.rnn_project(inp, w_ih, xw, T * B, inp.shape[2], G * H)
            k = layer * D + d
            lib.rnn_steps(xw, w_hh, b_ih, b_hh, h0[k] if h0.numel() else none, c0[k] if c0.numel() else none,
                          out, hn[k], cn[k] if G == 4 else none, h, c, packed, bias, T, B, H, G, D * H, d * H,
                          {batch_first}, d, {cell})
        inp = out
    return {result}'''


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    fields, call = recurrent_call(match, ctx)
    kernel = prelude({"kf_sigmoid", "kf_tanh"}) + "\n\n" + KERNEL.format(par_min=int(params["par_min"]),
                                                                        **GEMM[params.get("gemm", "dnnl")])
    host = HOST.format(**fields)
    knobs = ", ".join(f"{k}={v}" for k, v in params.items())
    doc = f"{match.kind} in C (offline engine, no LLM, backend cpu): the input product by one sgemm a layer, " \
          f"the steps by packed register tiles.\n\n" \
          f"Parameters: {knobs}.\n"
    return module_source(doc, kernel, PROTOS, "recurrent", [host], ctx, [f"return {call}"])

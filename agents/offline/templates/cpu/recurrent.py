"""Recurrent layers in C: ``nn.LSTM``, ``nn.GRU`` and ``nn.RNN`` (tanh or relu), any
number of layers, one or two directions, batch first or time first.

Per layer and direction, two calls. ``rnn_project`` multiplies every step's input by
the input weights at once (one OpenBLAS ``cblas_sgemm`` over all T x B rows) and adds
the biases that sit outside the recurrence. ``rnn_steps`` then walks the steps in order
(backwards for the reverse direction) in one OpenMP parallel region: each thread owns a
block of hidden units, multiplies the state by those units' rows of the hidden weights
(one single-threaded ``cblas_sgemm`` per gate) and runs the gates, the cell and the new
state for its units (vectorised ``kf_sigmoid`` / ``kf_tanh``); the threads meet once a
step, the state double-buffered (B, H) x 2. A threaded sgemm per step (OpenBLAS waking its
team 512 times a layer) was 6x slower than oneDNN's LSTM at KernelBench's sizes. The
step's output is written to the layer's output at the direction's column offset. Rows are
in the input's own order (b * T + t when batch first, else t * B + b), so every layer's
output is already in the layout the module returns. Gate order and equations are
torch's: LSTM i, f, g, o; GRU r, z, n with the n gate's hidden bias inside r * (...).
"""

from __future__ import annotations

from typing import Any

from ..common import recurrent_call
from .common import module_source
from .mathlib import prelude

PARAM_SPACE: list[dict[str, Any]] = [
    {"par_min": 1 << 17},      # a step on every thread once it has 128K multiply-adds (the bias pass: elements)
    {"par_min": 1 << 30},      # one thread (a small layer: meeting every step costs more)
    {"par_min": 1 << 14},
    {"par_min": 1 << 20},
]

KERNEL = '''#include <cblas.h>
#include <omp.h>
#include <string.h>

/* xw (rows, G * H) = x (rows, n_in) . w_ih^T + b_ih + b_hh (a GRU's n gate keeps its hidden
   bias out: r scales it inside the recurrence). A bias pointer may be NULL (no bias). */
void rnn_project(const float* x, const float* w_ih, const float* b_ih, const float* b_hh, float* xw,
                 int64_t rows, int64_t n_in, int64_t G, int64_t H, int64_t gru) {{
    const int64_t GH = G * H;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)rows, (blasint)GH, (blasint)n_in, 1.0f,
                x, (blasint)n_in, w_ih, (blasint)n_in, 0.0f, xw, (blasint)GH);
    if (!b_ih && !b_hh) return;
    #pragma omp parallel for schedule(static) if(rows * GH > {par_min})
    for (int64_t r = 0; r < rows; r++) {{
        float* row = xw + r * GH;
        for (int64_t j = 0; j < GH; j++) {{
            float b = b_ih ? b_ih[j] : 0.0f;
            if (b_hh && !(gru && j >= 2 * H)) b += b_hh[j];
            row[j] += b;
        }}
    }}
}}

/* Step t for one thread's hidden units [j0, j1): hw's columns of those units (each gate's
   block) = h_in . w_hh^T on those rows of w_hh (one sgemm per gate, single-threaded: OpenBLAS
   runs on one thread inside an active parallel region), then the cell for those units. */
static void kf_units(const float* xw, const float* w_hh, const float* b_hh, const float* h_in, float* h_out,
                     float* c, float* hw, float* out, int64_t t, int64_t T, int64_t B, int64_t H, int64_t G,
                     int64_t out_cols, int64_t out_off, int64_t batch_first, int64_t cell, int64_t j0, int64_t j1) {{
    const int64_t GH = G * H, n = j1 - j0;
    if (n <= 0) return;
    if (n == H)  /* every unit (one thread): the gates' rows of w_hh are one block, OpenBLAS threads it */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)B, (blasint)GH, (blasint)H, 1.0f,
                    h_in, (blasint)H, w_hh, (blasint)H, 0.0f, hw, (blasint)GH);
    else
        for (int64_t q = 0; q < G; q++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)B, (blasint)n, (blasint)H, 1.0f,
                        h_in, (blasint)H, w_hh + (q * H + j0) * H, (blasint)H, 0.0f, hw + q * H + j0, (blasint)GH);
    for (int64_t b = 0; b < B; b++) {{
        const int64_t row = batch_first ? b * T + t : t * B + b;
        const float* g = xw + row * GH;
        const float* u = hw + b * GH;
        const float* hp = h_in + b * H;
        float* hb = h_out + b * H;
        float* o = out + row * out_cols + out_off;
        if (cell == 0) {{
            float* cb = c + b * H;
            #pragma omp simd
            for (int64_t j = j0; j < j1; j++) {{
                const float ig = kf_sigmoid(g[j] + u[j]);
                const float fg = kf_sigmoid(g[H + j] + u[H + j]);
                const float gg = kf_tanh(g[2 * H + j] + u[2 * H + j]);
                const float og = kf_sigmoid(g[3 * H + j] + u[3 * H + j]);
                const float cc = fg * cb[j] + ig * gg;
                cb[j] = cc;
                hb[j] = og * kf_tanh(cc);
                o[j] = hb[j];
            }}
        }} else if (cell == 1) {{
            #pragma omp simd
            for (int64_t j = j0; j < j1; j++) {{
                const float r = kf_sigmoid(g[j] + u[j]);
                const float z = kf_sigmoid(g[H + j] + u[H + j]);
                const float nn = kf_tanh(g[2 * H + j] + r * (u[2 * H + j] + (b_hh ? b_hh[2 * H + j] : 0.0f)));
                hb[j] = (1.0f - z) * nn + z * hp[j];
                o[j] = hb[j];
            }}
        }} else {{
            #pragma omp simd
            for (int64_t j = j0; j < j1; j++) {{
                const float v = g[j] + u[j];
                hb[j] = cell == 2 ? kf_tanh(v) : (v > 0.0f ? v : (v != v ? v : 0.0f));
                o[j] = hb[j];
            }}
        }}
    }}
}}

/* Every step of one layer in one direction. h0 / c0: (B, H) or NULL (zeros); h: (2, B, H), the
   state before and after a step by turns; c: (B, H); hw: (B, G * H). out: the layer's output
   rows of out_cols floats, this direction's H columns from out_off; hn / cn: (B, H), the state
   after the last step. cell: 0 LSTM, 1 GRU, 2 RNN tanh, 3 RNN relu. One parallel region for all
   the steps: each thread owns a block of hidden units (its rows of w_hh, its columns of the
   state) and the threads meet once a step, where the next step's product needs the whole state. */
void rnn_steps(const float* xw, const float* w_hh, const float* b_hh, const float* h0, const float* c0,
               float* out, float* hn, float* cn, float* h, float* c, float* hw, int64_t T, int64_t B,
               int64_t H, int64_t G, int64_t out_cols, int64_t out_off, int64_t batch_first,
               int64_t reverse, int64_t cell) {{
    if (h0) memcpy(h, h0, (size_t)(B * H) * sizeof(float)); else memset(h, 0, (size_t)(B * H) * sizeof(float));
    if (cell == 0) {{
        if (c0) memcpy(c, c0, (size_t)(B * H) * sizeof(float)); else memset(c, 0, (size_t)(B * H) * sizeof(float));
    }}
    #pragma omp parallel if(B * G * H * H > {par_min})
    {{
        const int64_t nt = omp_get_num_threads(), me = omp_get_thread_num();
        int64_t per = (H + nt - 1) / nt;
        per = (per + 7) / 8 * 8;  /* whole vectors of units per thread */
        const int64_t j0 = me * per < H ? me * per : H, j1 = j0 + per < H ? j0 + per : H;
        for (int64_t s = 0; s < T; s++) {{
            const int64_t t = reverse ? T - 1 - s : s;
            const float* h_in = h + (s % 2) * B * H;
            float* h_out = h + ((s + 1) % 2) * B * H;
            kf_units(xw, w_hh, b_hh, h_in, h_out, c, hw, out, t, T, B, H, G, out_cols, out_off, batch_first,
                     cell, j0, j1);
            #pragma omp barrier
        }}
    }}
    memcpy(hn, h + (T % 2) * B * H, (size_t)(B * H) * sizeof(float));
    if (cell == 0 && cn) memcpy(cn, c, (size_t)(B * H) * sizeof(float));
}}'''

PROTOS = [
    "void rnn_project(const float* x, const float* w_ih, const float* b_ih, const float* b_hh, float* xw, "
    "int64_t rows, int64_t n_in, int64_t G, int64_t H, int64_t gru)",
    "void rnn_steps(const float* xw, const float* w_hh, const float* b_hh, const float* h0, const float* c0, "
    "float* out, float* hn, float* cn, float* h, float* c, float* hw, int64_t T, int64_t B, int64_t H, "
    "int64_t G, int64_t out_cols, int64_t out_off, int64_t batch_first, int64_t reverse, int64_t cell)",
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
    h, c, hw = torch.empty(2, B, H), torch.empty(B, H), torch.empty(B, G * H)
    inp, out = x, x
    for layer in range(L):
        out = torch.empty(x.shape[0], x.shape[1], D * H)
        for d in range(D):
            w_ih, w_hh, b_ih, b_hh = weights[layer * D + d]
            b_ih = none if b_ih is None else b_ih
            b_hh = none if b_hh is None else b_hh
            xw = torch.empty(x.shape[0], x.shape[1], G * H)
            lib.rnn_project(inp, w_ih, b_ih, b_hh, xw, T * B, inp.shape[2], G, H, {gru})
            k = layer * D + d
            lib.rnn_steps(xw, w_hh, b_hh, h0[k] if h0.numel() else none, c0[k] if c0.numel() else none,
                          out, hn[k], cn[k] if G == 4 else none, h, c, hw, T, B, H, G, D * H, d * H,
                          {batch_first}, d, {cell})
        inp = out
    return {result}'''


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    fields, call = recurrent_call(match, ctx)
    kernel = prelude({"kf_sigmoid", "kf_tanh"}) + "\n\n" + KERNEL.format(par_min=int(params["par_min"]))
    host = HOST.format(**fields)
    knobs = ", ".join(f"{k}={v}" for k, v in params.items())
    doc = f"{match.kind} in C (offline engine, no LLM, backend cpu), OpenBLAS's sgemm per step.\n\n" \
          f"Parameters: {knobs}.\n"
    return module_source(doc, kernel, PROTOS, "recurrent", [host], ctx, [f"return {call}"])

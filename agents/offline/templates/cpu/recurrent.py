"""Recurrent layers in C: ``nn.LSTM``, ``nn.GRU`` and ``nn.RNN`` (tanh or relu), any
number of layers, one or two directions, batch first or time first.

Per layer and direction, two calls. ``rnn_project`` multiplies every step's input by
the input weights at once (one OpenBLAS ``cblas_sgemm`` over all T x B rows) and adds
the biases that sit outside the recurrence. ``rnn_steps`` then walks the steps in order
(backwards for the reverse direction): one ``cblas_sgemm`` of the state by the hidden
weights (B x G*H), and the gates, the cell and the new state in one pass over each row,
the state kept in a (B, H) workspace, the step's output written to the layer's output
at the direction's column offset. Rows are in the input's own order (b * T + t when
batch first, else t * B + b), so every layer's output is already in the layout the
module returns. Gate order and equations are torch's: LSTM i, f, g, o; GRU r, z, n with
the n gate's hidden bias inside r * (...).
"""

from __future__ import annotations

from typing import Any

from ..common import recurrent_call
from .common import module_source

PARAM_SPACE: list[dict[str, Any]] = [
    {"par_min": 16384},        # the gates of a step on every thread once a step has 16K of them
    {"par_min": 1 << 30},      # one thread for the gates (a small batch: the fork costs more)
    {"par_min": 2048},
    {"par_min": 65536},
]

KERNEL = '''#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float kf_sig(float v) {{ return 1.0f / (1.0f + expf(-v)); }}

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

/* Every step of one layer in one direction. h0 / c0: (B, H) or NULL (zeros); h, c: (B, H)
   workspaces, hw: (B, G * H). out: the layer's output rows of out_cols floats, this
   direction's H columns from out_off; hn / cn: (B, H), the state after the last step.
   cell: 0 LSTM, 1 GRU, 2 RNN tanh, 3 RNN relu. */
void rnn_steps(const float* xw, const float* w_hh, const float* b_hh, const float* h0, const float* c0,
               float* out, float* hn, float* cn, float* h, float* c, float* hw, int64_t T, int64_t B,
               int64_t H, int64_t G, int64_t out_cols, int64_t out_off, int64_t batch_first,
               int64_t reverse, int64_t cell) {{
    const int64_t GH = G * H;
    if (h0) memcpy(h, h0, (size_t)(B * H) * sizeof(float)); else memset(h, 0, (size_t)(B * H) * sizeof(float));
    if (cell == 0) {{
        if (c0) memcpy(c, c0, (size_t)(B * H) * sizeof(float)); else memset(c, 0, (size_t)(B * H) * sizeof(float));
    }}
    for (int64_t s = 0; s < T; s++) {{
        const int64_t t = reverse ? T - 1 - s : s;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)B, (blasint)GH, (blasint)H, 1.0f,
                    h, (blasint)H, w_hh, (blasint)H, 0.0f, hw, (blasint)GH);
        #pragma omp parallel for schedule(static) if(B * H > {par_min})
        for (int64_t b = 0; b < B; b++) {{
            const int64_t row = batch_first ? b * T + t : t * B + b;
            const float* g = xw + row * GH;
            const float* u = hw + b * GH;
            float* hb = h + b * H;
            float* o = out + row * out_cols + out_off;
            if (cell == 0) {{
                float* cb = c + b * H;
                for (int64_t j = 0; j < H; j++) {{
                    const float ig = kf_sig(g[j] + u[j]);
                    const float fg = kf_sig(g[H + j] + u[H + j]);
                    const float gg = tanhf(g[2 * H + j] + u[2 * H + j]);
                    const float og = kf_sig(g[3 * H + j] + u[3 * H + j]);
                    const float cc = fg * cb[j] + ig * gg;
                    cb[j] = cc;
                    hb[j] = og * tanhf(cc);
                    o[j] = hb[j];
                }}
            }} else if (cell == 1) {{
                for (int64_t j = 0; j < H; j++) {{
                    const float r = kf_sig(g[j] + u[j]);
                    const float z = kf_sig(g[H + j] + u[H + j]);
                    const float n = tanhf(g[2 * H + j] + r * (u[2 * H + j] + (b_hh ? b_hh[2 * H + j] : 0.0f)));
                    hb[j] = (1.0f - z) * n + z * hb[j];
                    o[j] = hb[j];
                }}
            }} else {{
                for (int64_t j = 0; j < H; j++) {{
                    const float v = g[j] + u[j];
                    hb[j] = cell == 2 ? tanhf(v) : (v > 0.0f ? v : (v != v ? v : 0.0f));
                    o[j] = hb[j];
                }}
            }}
        }}
    }}
    memcpy(hn, h, (size_t)(B * H) * sizeof(float));
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
    h, c, hw = torch.empty(B, H), torch.empty(B, H), torch.empty(B, G * H)
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
    kernel = KERNEL.format(par_min=int(params["par_min"]))
    host = HOST.format(**fields)
    knobs = ", ".join(f"{k}={v}" for k, v in params.items())
    doc = f"{match.kind} in C (offline engine, no LLM, backend cpu), OpenBLAS's sgemm per step.\n\n" \
          f"Parameters: {knobs}.\n"
    return module_source(doc, kernel, PROTOS, "recurrent", [host], ctx, [f"return {call}"])

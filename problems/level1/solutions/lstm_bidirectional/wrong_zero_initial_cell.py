"""WRONG: the cell starts at zero instead of c0 (the initial state is half ignored).

Caught by: correctness, perturbed_sizes
"""

import torch
import torch.nn as nn
from kforge_native import load_c

SRC = r'''
#include <math.h>
#include <stdint.h>

static inline float sig(float v) { return 1.0f / (1.0f + expf(-v)); }

/* x: (B, T, I) batch first; out: (B, T, out_cols), this direction's H columns from out_off;
   h, c: (B, H), the initial state on entry, the final one on return; gates: (B, 4H). */
void lstm_direction(const float* x, const float* w_ih, const float* w_hh, const float* b_ih, const float* b_hh,
                    float* out, float* h, float* c, float* gates, int64_t T, int64_t B, int64_t I, int64_t H,
                    int64_t out_cols, int64_t out_off, int64_t reverse) {
    for (int64_t s = 0; s < T; s++) {
        const int64_t t = reverse ? T - 1 - s : s;
        #pragma omp parallel for schedule(static)
        for (int64_t b = 0; b < B; b++) {
            const float* xt = x + (b * T + t) * I;
            float* hb = h + b * H;
            float* cb = c + b * H;
            float* g = gates + b * 4 * H;
            for (int64_t r = 0; r < 4 * H; r++) {
                float acc = b_ih[r] + b_hh[r];
                for (int64_t k = 0; k < I; k++) acc += w_ih[r * I + k] * xt[k];
                for (int64_t k = 0; k < H; k++) acc += w_hh[r * H + k] * hb[k];
                g[r] = acc;
            }
            float* o = out + (b * T + t) * out_cols + out_off;
            for (int64_t j = 0; j < H; j++) {
                const float cc = sig(g[H + j]) * cb[j] + sig(g[j]) * tanhf(g[2 * H + j]);
                cb[j] = cc;
                hb[j] = sig(g[3 * H + j]) * tanhf(cc);
                o[j] = hb[j];
            }
        }
    }
}
'''
lib = load_c(SRC, [
    "void lstm_direction(const float* x, const float* w_ih, const float* w_hh, const float* b_ih, "
    "const float* b_hh, float* out, float* h, float* c, float* gates, int64_t T, int64_t B, int64_t I, "
    "int64_t H, int64_t out_cols, int64_t out_off, int64_t reverse)",
], name="lstm_bidirectional")


class ModelNew(nn.Module):
    def __init__(self, input_size: int, hidden_size: int, num_layers: int):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, bidirectional=True)

    def forward(self, x: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        H, L = self.lstm.hidden_size, self.lstm.num_layers
        h_n, c_n = h0.clone(), torch.zeros_like(c0)
        gates = torch.empty(B, 4 * H)
        inp = x.contiguous()
        for layer in range(L):
            out = torch.empty(B, T, 2 * H)
            for d, suffix in enumerate(("", "_reverse")):
                w = [getattr(self.lstm, f"{name}_l{layer}{suffix}") for name in ("weight_ih", "weight_hh",
                                                                                 "bias_ih", "bias_hh")]
                k = 2 * layer + d
                lib.lstm_direction(inp, *w, out, h_n[k], c_n[k], gates, T, B, inp.shape[2], H, 2 * H, d * H, d)
            inp = out
        return h_n

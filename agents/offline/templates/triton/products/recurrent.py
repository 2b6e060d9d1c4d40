"""Recurrent layers (``nn.LSTM``, ``nn.GRU``, ``nn.RNN`` tanh / relu) in Triton: any number
of layers, one or two directions, batch first or time first; float32.

Per layer and direction: ``rnn_project_kernel`` computes every step's input part at once
(xw = x . w_ih^T + the biases outside the recurrence; one program per row and BN gate
columns), then one ``rnn_step_kernel`` launch per step: a program owns one batch row
and BJ hidden units, multiplies the previous state by those units' rows of w_hh for each
gate (BK-wide chunks of the state), and writes the new state (into the other of two
buffers: programs of the same step still read the old one), the cell (LSTM) and the
step's output at the direction's column offset. The last step writes h_n / c_n in place.
Gate order and equations are torch's (LSTM i, f, g, o; GRU r, z, n with the n gate's
hidden bias inside r * (...)), as in the C template (``cpu/recurrent.py``).
"""

from __future__ import annotations

from typing import Any

from ...common import model_class, module_source, recurrent_call
from ...spaces import param_space

PARAM_SPACE: list[dict[str, Any]] = param_space("triton", "recurrent")

KERNEL = '''@triton.jit
def rnn_sig(v):
    return 1.0 / (1.0 + tl.exp(-v))


@triton.jit
def rnn_tanh(v):
    """tanh through e = exp(-2|v|): no overflow for large |v|."""
    e = tl.exp(-2.0 * tl.abs(v))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(v < 0.0, -t, t)


@triton.jit
def rnn_project_kernel(x_ptr, w_ptr, bih_ptr, bhh_ptr, xw_ptr, N_IN, GH, H, HAS_BIH: tl.constexpr,
                       HAS_BHH: tl.constexpr, GRU: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """xw[row, n] = sum_k x[row, k] * w[n, k] + b_ih[n] + b_hh[n] (a GRU's n gate, n >= 2H,
    keeps its hidden bias out)."""
    row = tl.program_id(0).to(tl.int64)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    nm = n < GH
    acc = tl.zeros((BN,), tl.float32)
    for k0 in range(0, N_IN, BK):
        k = k0 + tl.arange(0, BK)
        km = k < N_IN
        xk = tl.load(x_ptr + row * N_IN + k, mask=km, other=0.0)
        w = tl.load(w_ptr + n[:, None].to(tl.int64) * N_IN + k[None, :], mask=nm[:, None] & km[None, :], other=0.0)
        acc += tl.sum(w * xk[None, :], axis=1)
    if HAS_BIH:
        acc += tl.load(bih_ptr + n, mask=nm, other=0.0)
    if HAS_BHH:
        if GRU:
            acc += tl.load(bhh_ptr + n, mask=nm & (n < 2 * H), other=0.0)
        else:
            acc += tl.load(bhh_ptr + n, mask=nm, other=0.0)
    tl.store(xw_ptr + row * GH + n, acc, mask=nm)


@triton.jit
def rnn_step_kernel(xw_ptr, whh_ptr, bhh_ptr, h_in, c_in, h_out, c_out, out_ptr, t, T, B, H, out_cols, out_off,
                    BATCH_FIRST: tl.constexpr, CELL: tl.constexpr, G: tl.constexpr, HAS_BHH: tl.constexpr,
                    BJ: tl.constexpr, BK: tl.constexpr):
    """One step for batch row b and hidden units j: gates = xw[row] + h_in[b] . w_hh^T, then
    the cell (CELL 0 LSTM, 1 GRU, 2 RNN tanh, 3 RNN relu)."""
    b = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1) * BJ + tl.arange(0, BJ)
    jm = j < H
    if BATCH_FIRST:
        row = b * T + t
    else:
        row = t * B + b
    u0 = tl.zeros((BJ,), tl.float32)
    u1 = tl.zeros((BJ,), tl.float32)
    u2 = tl.zeros((BJ,), tl.float32)
    u3 = tl.zeros((BJ,), tl.float32)
    jj = j[:, None].to(tl.int64)
    for k0 in range(0, H, BK):
        k = k0 + tl.arange(0, BK)
        km = k < H
        m = jm[:, None] & km[None, :]
        hk = tl.load(h_in + b * H + k, mask=km, other=0.0)[None, :]
        u0 += tl.sum(tl.load(whh_ptr + jj * H + k[None, :], mask=m, other=0.0) * hk, axis=1)
        if G >= 3:
            u1 += tl.sum(tl.load(whh_ptr + (jj + H) * H + k[None, :], mask=m, other=0.0) * hk, axis=1)
            u2 += tl.sum(tl.load(whh_ptr + (jj + 2 * H) * H + k[None, :], mask=m, other=0.0) * hk, axis=1)
        if G == 4:
            u3 += tl.sum(tl.load(whh_ptr + (jj + 3 * H) * H + k[None, :], mask=m, other=0.0) * hk, axis=1)
    g = xw_ptr + row * (G * H)
    if CELL == 0:
        ig = rnn_sig(tl.load(g + j, mask=jm, other=0.0) + u0)
        fg = rnn_sig(tl.load(g + H + j, mask=jm, other=0.0) + u1)
        gg = rnn_tanh(tl.load(g + 2 * H + j, mask=jm, other=0.0) + u2)
        og = rnn_sig(tl.load(g + 3 * H + j, mask=jm, other=0.0) + u3)
        c = fg * tl.load(c_in + b * H + j, mask=jm, other=0.0) + ig * gg
        tl.store(c_out + b * H + j, c, mask=jm)
        h = og * rnn_tanh(c)
    elif CELL == 1:
        r = rnn_sig(tl.load(g + j, mask=jm, other=0.0) + u0)
        z = rnn_sig(tl.load(g + H + j, mask=jm, other=0.0) + u1)
        if HAS_BHH:
            u2 += tl.load(bhh_ptr + 2 * H + j, mask=jm, other=0.0)
        n = rnn_tanh(tl.load(g + 2 * H + j, mask=jm, other=0.0) + r * u2)
        h = (1.0 - z) * n + z * tl.load(h_in + b * H + j, mask=jm, other=0.0)
    elif CELL == 2:
        h = rnn_tanh(tl.load(g + j, mask=jm, other=0.0) + u0)
    else:
        v = tl.load(g + j, mask=jm, other=0.0) + u0
        h = tl.where(v != v, v, tl.maximum(v, 0.0))
    tl.store(h_out + b * H + j, h, mask=jm)
    tl.store(out_ptr + row * out_cols + out_off + j, h, mask=jm)
'''

HOST = '''def recurrent(x: torch.Tensor, h0: torch.Tensor | None, c0: torch.Tensor | None,
              weights: list[tuple[torch.Tensor, ...]]) -> torch.Tensor:
    """{what}: {layers} layer(s) x {directions} direction(s), gates {gates}; returns the {select}.
    weights: per layer and direction (w_ih, w_hh, b_ih, b_hh), a missing bias as None."""
    x = x.contiguous()
    dev = x.device
    T, B = {steps}
    H = weights[0][1].shape[1]
    L, D, G = {layers}, {directions}, {gates}
    zeros = torch.zeros(B, H, device=dev)
    hn = torch.empty(L * D, B, H, device=dev)
    cn = torch.empty(L * D, B, H, device=dev) if G == 4 else zeros
    h_buf = [torch.empty(B, H, device=dev), torch.empty(B, H, device=dev)]
    c_buf = [torch.empty(B, H, device=dev), torch.empty(B, H, device=dev)]
    inp, out = x, x
    for layer in range(L):
        out = torch.empty(x.shape[0], x.shape[1], D * H, device=dev)
        for d in range(D):
            w_ih, w_hh, b_ih, b_hh = weights[layer * D + d]
            k = layer * D + d
            xw = torch.empty(x.shape[0], x.shape[1], G * H, device=dev)
            n_in = inp.shape[2]
            rnn_project_kernel[(T * B, triton.cdiv(G * H, {bn}))](
                inp, w_ih, w_ih if b_ih is None else b_ih, w_ih if b_hh is None else b_hh, xw, n_in, G * H, H,
                HAS_BIH=b_ih is not None, HAS_BHH=b_hh is not None, GRU={gru}, BN={bn}, BK={bk},
                num_warps={warps})
            h_prev = zeros if h0 is None else h0[k].contiguous()
            c_prev = zeros if c0 is None else c0[k].contiguous()
            for s in range(T):
                t = T - 1 - s if d else s
                h_next = hn[k] if s == T - 1 else h_buf[s % 2]
                c_next = (cn[k] if s == T - 1 else c_buf[s % 2]) if G == 4 else zeros
                rnn_step_kernel[(B, triton.cdiv(H, {bj}))](
                    xw, w_hh, w_hh if b_hh is None else b_hh, h_prev, c_prev, h_next, c_next, out, t, T, B, H,
                    D * H, d * H, BATCH_FIRST={batch_first}, CELL={cell}, G=G, HAS_BHH=b_hh is not None,
                    BJ={bj}, BK={bk}, num_warps={warps})
                h_prev, c_prev = h_next, c_next
        inp = out
    return {result}'''


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    fields, call = recurrent_call(match, ctx)
    host = HOST.format(**fields, bn=params["BN"], bk=params["BK"], bj=params["BJ"], warps=params["num_warps"])
    cls = model_class(ctx, [f"return {call}"],
                      "Same constructor, parameters and forward signature as the reference's Model.")
    knobs = ", ".join(f"{k}={v}" for k, v in params.items())
    doc = f"{match.kind} in Triton (offline engine, no LLM).\n\nLaunch parameters: {knobs}.\n"
    return module_source(doc, [KERNEL, host, cls])

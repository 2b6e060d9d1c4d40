"""LLaMA feed-forward block, x + down(silu(gate(h)) * up(h)) with h = RMSNorm(x),
in three Triton launches: a row RMSNorm, the gate/up projections sharing one K
loop with the SiLU gating fused, and the down projection with the residual fused."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, y_ptr, n_rows, n_cols, eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # y = x * rsqrt(mean(x^2) + eps) * w over rows of n_cols; BLOCK_N >= n_cols.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    col_ok = cols < n_cols
    mask = (rows[:, None] < n_rows) & col_ok[None, :]
    offs = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    inv_rms = tl.rsqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0)
    tl.store(y_ptr + offs, x * inv_rms[:, None] * w[None, :], mask=mask)


@triton.jit
def gate_up_kernel(x_ptr, wg_ptr, wu_ptr, h_ptr, M, N, K,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # h = silu(x @ wg^T) * (x @ wu^T). x: (M, K), wg / wu: (N, K), h: (M, N).
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    u = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + rk
        x = tl.load(x_ptr + rm[:, None] * K + k[None, :], mask=(rm[:, None] < M) & (k[None, :] < K), other=0.0)
        w_mask = (k[:, None] < K) & (rn[None, :] < N)
        g += tl.dot(x, tl.load(wg_ptr + rn[None, :] * K + k[:, None], mask=w_mask, other=0.0), input_precision="ieee")
        u += tl.dot(x, tl.load(wu_ptr + rn[None, :] * K + k[:, None], mask=w_mask, other=0.0), input_precision="ieee")
    tl.store(h_ptr + rm[:, None] * N + rn[None, :], g / (1.0 + tl.exp(-g)) * u,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def down_residual_kernel(h_ptr, w_ptr, r_ptr, y_ptr, M, N, K,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # y = r + h @ w^T. h: (M, K), w: (N, K), r / y: (M, N).
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    out_mask = (rm[:, None] < M) & (rn[None, :] < N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + rk
        h = tl.load(h_ptr + rm[:, None] * K + k[None, :], mask=(rm[:, None] < M) & (k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * K + k[:, None], mask=(k[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(h, w, input_precision="ieee")
    acc += tl.load(r_ptr + rm[:, None] * N + rn[None, :], mask=out_mask, other=0.0)
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc, mask=out_mask)


class ModelNew(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.norm_weight = nn.Parameter(torch.ones(dim))  # parameters come from the reference
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)
        self.eps = 1e-6

    def forward(self, x):
        shape = x.shape
        x2 = x.contiguous().view(-1, shape[-1])
        M, dim = x2.shape
        hidden = self.gate.weight.shape[0]
        normed = torch.empty_like(x2)
        block_n = triton.next_power_of_2(dim)
        block_m = max(1, 4096 // block_n)
        rms_norm_kernel[(triton.cdiv(M, block_m),)](x2, self.norm_weight, normed, M, dim, self.eps,
                                                     BLOCK_M=block_m, BLOCK_N=block_n)
        h = torch.empty(M, hidden, device=x.device, dtype=x.dtype)
        gate_up_kernel[(triton.cdiv(M, 64), triton.cdiv(hidden, 64))](
            normed, self.gate.weight, self.up.weight, h, M, hidden, dim, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
        y = torch.empty_like(x2)
        down_residual_kernel[(triton.cdiv(M, 64), triton.cdiv(dim, 64))](
            h, self.down.weight, x2, y, M, dim, hidden, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
        return y.view(shape)

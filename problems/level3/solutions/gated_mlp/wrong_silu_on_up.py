"""WRONG on purpose: applies SiLU to the up branch instead of the gate branch, gate(x) * silu(up(x)).

Caught by: correctness
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gate_up_kernel(x_ptr, wg_ptr, wu_ptr, h_ptr, M, N, K,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
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
    h = g * (u / (1.0 + tl.exp(-u)))
    tl.store(h_ptr + rm[:, None] * N + rn[None, :], h, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def matmul_nt_kernel(x_ptr, w_ptr, y_ptr, M, N, K,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + rk
        x = tl.load(x_ptr + rm[:, None] * K + k[None, :], mask=(rm[:, None] < M) & (k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * K + k[:, None], mask=(k[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(x, w, input_precision="ieee")
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        shape = x.shape
        x2 = x.contiguous().view(-1, shape[-1])
        M, dim = x2.shape
        hidden = self.gate.weight.shape[0]
        h = torch.empty(M, hidden, device=x.device, dtype=x.dtype)
        gate_up_kernel[(triton.cdiv(M, 64), triton.cdiv(hidden, 64))](
            x2, self.gate.weight, self.up.weight, h, M, hidden, dim, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
        y = torch.empty(M, dim, device=x.device, dtype=x.dtype)
        matmul_nt_kernel[(triton.cdiv(M, 64), triton.cdiv(dim, 64))](
            h, self.down.weight, y, M, dim, hidden, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
        return y.view(shape)

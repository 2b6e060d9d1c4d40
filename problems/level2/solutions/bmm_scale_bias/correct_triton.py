"""Batched (a[b] @ c[b]) * scale + bias: a tiled Triton matmul per batch (third
grid axis) with the scale and the bias over the last dimension fused in."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bmm_scale_bias_kernel(a_ptr, c_ptr, bias_ptr, y_ptr, M, N, K, scale,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # a: (B, M, K), c: (B, K, N), bias: (N,), y: (B, M, N), contiguous; grid = (M tiles, N tiles, B).
    batch = tl.program_id(2)
    a_ptr += batch * M * K
    c_ptr += batch * K * N
    y_ptr += batch * M * N
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * K + k[None, :], mask=(rm[:, None] < M) & (k[None, :] < K), other=0.0)
        c = tl.load(c_ptr + k[:, None] * N + rn[None, :], mask=(k[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, c, input_precision="ieee")
    out = acc * scale + tl.load(bias_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], out, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, n, scale):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(n))  # overwritten by the reference's bias
        self.scale = scale

    def forward(self, a, c):
        a, c = a.contiguous(), c.contiguous()
        batch, M, K = a.shape
        N = c.shape[2]
        y = torch.empty(batch, M, N, device=a.device, dtype=a.dtype)
        grid = (triton.cdiv(M, 64), triton.cdiv(N, 64), batch)
        bmm_scale_bias_kernel[grid](a, c, self.bias, y, M, N, K, self.scale, BLOCK_M=64, BLOCK_N=64, BLOCK_K=64)
        return y

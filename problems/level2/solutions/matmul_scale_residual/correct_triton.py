"""(x @ w) * scale + residual: a tiled Triton matmul with the scale and the
residual add fused into its epilogue."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_scale_add_kernel(x_ptr, w_ptr, r_ptr, y_ptr, M, N, K, scale,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # x: (M, K), w: (K, N), r / y: (M, N), all contiguous.
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    out_mask = (rm[:, None] < M) & (rn[None, :] < N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + rk
        x = tl.load(x_ptr + rm[:, None] * K + k[None, :], mask=(rm[:, None] < M) & (k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + k[:, None] * N + rn[None, :], mask=(k[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(x, w, input_precision="ieee")
    r = tl.load(r_ptr + rm[:, None] * N + rn[None, :], mask=out_mask, other=0.0)
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc * scale + r, mask=out_mask)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x, w, residual):
        x, w, residual = x.contiguous(), w.contiguous(), residual.contiguous()
        M, K = x.shape
        N = w.shape[1]
        y = torch.empty(M, N, device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
        matmul_scale_add_kernel[grid](x, w, residual, y, M, N, K, self.scale, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
        return y

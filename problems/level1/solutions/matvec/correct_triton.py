"""y = A @ v: each program owns BLOCK_M rows of A and walks K in BLOCK_K chunks,
accumulating row-wise products with v in fp32."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matvec_kernel(a_ptr, v_ptr, y_ptr, M, K, stride_am, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    # a: (M, K) with unit column stride; v: (K,); y: (M,).
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    acc = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        k_ok = k < K
        a = tl.load(a_ptr + rows[:, None] * stride_am + k[None, :], mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        v = tl.load(v_ptr + k, mask=k_ok, other=0.0)
        acc += tl.sum(a * v[None, :], axis=1)
    tl.store(y_ptr + rows, acc, mask=row_ok)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, v):
        a, v = a.contiguous(), v.contiguous()
        M, K = a.shape
        y = torch.empty(M, device=a.device, dtype=a.dtype)
        matvec_kernel[(triton.cdiv(M, 64),)](a, v, y, M, K, a.stride(0), BLOCK_M=64, BLOCK_K=256)
        return y

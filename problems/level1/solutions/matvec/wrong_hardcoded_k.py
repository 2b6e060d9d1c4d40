"""WRONG on purpose: the row length is hard-coded to the default K = 1037, so any other K reads the wrong rows.

Caught by: perturbed_sizes
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matvec_kernel(a_ptr, v_ptr, y_ptr, M, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    acc = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        k_ok = k < K
        a = tl.load(a_ptr + rows[:, None] * K + k[None, :], mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        v = tl.load(v_ptr + k, mask=k_ok, other=0.0)
        acc += tl.sum(a * v[None, :], axis=1)
    tl.store(y_ptr + rows, acc, mask=row_ok)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, v):
        a, v = a.contiguous(), v.contiguous()
        M = a.shape[0]
        y = torch.empty(M, device=a.device, dtype=a.dtype)
        matvec_kernel[(triton.cdiv(M, 64),)](a, v, y, M, BLOCK_M=64, BLOCK_K=256, K=1037)
        return y

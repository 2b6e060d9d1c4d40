"""softmax(x @ W^T + b): one program per BLOCK_M rows computes all the logits of
those rows with a tiled matmul (BLOCK_N >= classes) and normalises them in the
epilogue; columns past the last class are set to -inf so they weigh nothing."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_softmax_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # x: (M, K), w: (N, K), b: (N,), y: (M, N), contiguous; BLOCK_N >= N.
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    col_ok = rn < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + rk
        x = tl.load(x_ptr + rm[:, None] * K + k[None, :], mask=(rm[:, None] < M) & (k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * K + k[:, None], mask=(k[:, None] < K) & col_ok[None, :], other=0.0)
        acc += tl.dot(x, w, input_precision="ieee")
    logits = acc + tl.load(b_ptr + rn, mask=col_ok, other=0.0)[None, :]
    logits = tl.where(col_ok[None, :], logits, -float("inf"))
    e = tl.exp(logits - tl.max(logits, axis=1)[:, None])
    probs = e / tl.sum(e, axis=1)[:, None]
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], probs, mask=(rm[:, None] < M) & col_ok[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_features, num_classes):
        super().__init__()
        self.linear = nn.Linear(in_features, num_classes)  # parameter holder; never called

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        N = self.linear.weight.shape[0]
        y = torch.empty(M, N, device=x.device, dtype=x.dtype)
        block_n = max(16, triton.next_power_of_2(N))
        linear_softmax_kernel[(triton.cdiv(M, 32),)](x, self.linear.weight, self.linear.bias, y, M, N, K,
                                                     BLOCK_M=32, BLOCK_N=block_n, BLOCK_K=32)
        return y

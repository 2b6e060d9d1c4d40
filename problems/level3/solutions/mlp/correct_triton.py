"""Two-layer MLP, fc2(relu(fc1(x))), as two launches of one fused linear kernel:
a tiled matmul reading W (N, K) as the (K, N) operand, with bias and an optional
ReLU in its epilogue."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K, RELU: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # x: (M, K), w: (N, K), b: (N,), y: (M, N), contiguous. RELU: apply max(., 0) after the bias.
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + rk
        x = tl.load(x_ptr + rm[:, None] * K + k[None, :], mask=(rm[:, None] < M) & (k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * K + k[:, None], mask=(k[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(x, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    if RELU:
        acc = tl.maximum(acc, 0.0)
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def linear(x: torch.Tensor, layer: nn.Linear, relu: bool) -> torch.Tensor:
    M, K = x.shape
    N = layer.weight.shape[0]
    y = torch.empty(M, N, device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    linear_kernel[grid](x, layer.weight, layer.bias, y, M, N, K, RELU=relu, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    return y


class ModelNew(nn.Module):
    def __init__(self, in_features, hidden, out_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)  # parameter holders; never called
        self.fc2 = nn.Linear(hidden, out_features)

    def forward(self, x):
        h = linear(x.contiguous(), self.fc1, relu=True)
        return linear(h, self.fc2, relu=False)

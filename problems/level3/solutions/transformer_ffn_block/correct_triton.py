"""x + fc2(gelu(fc1(LayerNorm(x)))) in three Triton launches: a row LayerNorm,
a linear with bias + exact GELU fused, and a linear with bias + the residual fused."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_rows, n_cols, eps,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # x / y: (n_rows, n_cols) contiguous; w / b: (n_cols,); BLOCK_N >= n_cols.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    col_ok = cols < n_cols
    mask = (rows[:, None] < n_rows) & col_ok[None, :]
    offs = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=1) / n_cols
    centred = tl.where(mask, x - mean[:, None], 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=1) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0)
    b = tl.load(b_ptr + cols, mask=col_ok, other=0.0)
    tl.store(y_ptr + offs, centred * rstd[:, None] * w[None, :] + b[None, :], mask=mask)


@triton.jit
def linear_kernel(x_ptr, w_ptr, b_ptr, r_ptr, y_ptr, M, N, K, GELU: tl.constexpr, RESIDUAL: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # y = x @ w^T + b, then exact GELU (GELU) and/or + r (RESIDUAL). x: (M, K), w: (N, K), r / y: (M, N).
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    out_mask = (rm[:, None] < M) & (rn[None, :] < N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + rk
        x = tl.load(x_ptr + rm[:, None] * K + k[None, :], mask=(rm[:, None] < M) & (k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * K + k[:, None], mask=(k[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(x, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    if GELU:
        acc = 0.5 * acc * (1.0 + tl.erf(acc * 0.7071067811865476))
    if RESIDUAL:
        acc += tl.load(r_ptr + rm[:, None] * N + rn[None, :], mask=out_mask, other=0.0)
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc, mask=out_mask)


def linear(x: torch.Tensor, layer: nn.Linear, gelu: bool = False, residual: torch.Tensor | None = None):
    M, K = x.shape
    N = layer.weight.shape[0]
    y = torch.empty(M, N, device=x.device, dtype=x.dtype)
    r = residual if residual is not None else y  # placeholder pointer when RESIDUAL is off
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    linear_kernel[grid](x, layer.weight, layer.bias, r, y, M, N, K, GELU=gelu, RESIDUAL=residual is not None,
                        BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    return y


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)  # parameter holders; never called
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        shape = x.shape
        x2 = x.contiguous().view(-1, shape[-1])
        n_rows, dim = x2.shape
        normed = torch.empty_like(x2)
        block_n = triton.next_power_of_2(dim)
        block_m = max(1, 4096 // block_n)
        layer_norm_kernel[(triton.cdiv(n_rows, block_m),)](x2, self.norm.weight, self.norm.bias, normed, n_rows, dim,
                                                            self.norm.eps, BLOCK_M=block_m, BLOCK_N=block_n)
        hidden = linear(normed, self.fc1, gelu=True)
        return linear(hidden, self.fc2, residual=x2).view(shape)

"""argmin over dim 1 in Triton (offline engine, no LLM).

Launch parameters: BLOCK_M=4, BLOCK_N=256, num_warps=4.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def arg_rows_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """out[r] = the first column of the maximum of -x[r, :] (the first NaN if any).

    x_ptr: a contiguous (n_rows, n_cols) matrix; out_ptr: n_rows int64 indices
    BLOCK_M: rows per program; BLOCK_N: columns per step (powers of two)
    """
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    row_start = rows.to(tl.int64)[:, None] * n_cols
    best = tl.full((BLOCK_M, BLOCK_N), -float("inf"), tl.float32)
    at = tl.zeros((BLOCK_M, BLOCK_N), tl.int64)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols[None, :] < n_cols)
        v = -tl.load(x_ptr + row_start + cols[None, :], mask=mask, other=-float("inf")).to(tl.float32)
        better = mask & ((v > best) | ((v != v) & (best == best)) | ((start == 0) & (cols[None, :] < n_cols)))
        best = tl.where(better, v, best)
        at = tl.where(better, cols[None, :].to(tl.int64), at)
    has_nan = tl.max((best != best).to(tl.int32), axis=1)
    top = tl.max(tl.where(best != best, -float("inf"), best), axis=1)
    holds = tl.where(has_nan[:, None] > 0, best != best, best == top[:, None])
    first = tl.min(tl.where(holds, at, n_cols), axis=1)
    tl.store(out_ptr + rows, first, mask=row_mask)


def argmin(x: torch.Tensor) -> torch.Tensor:
    """argmin over dim 1, int64 indices."""
    out = torch.empty([s for d, s in enumerate(x.shape) if d != 1], dtype=torch.int64, device=x.device)
    if out.numel() == 0:
        return out
    rows = x.movedim(1, -1).contiguous()
    rows = rows.reshape(-1, rows.shape[-1])
    rows = rows.contiguous()
    n_rows, n_cols = rows.shape
    block_n = min(triton.next_power_of_2(n_cols), 256)
    arg_rows_kernel[(triton.cdiv(n_rows, 4),)](rows, out, n_rows, n_cols, BLOCK_M=4, BLOCK_N=block_n,
                                              num_warps=4)
    return out


class ModelNew(nn.Module):
    """Same constructor and forward signature as the reference's Model."""

    def __init__(self, dim) -> None:
        super().__init__()

    def forward(self, x) -> torch.Tensor:
        return argmin(x)

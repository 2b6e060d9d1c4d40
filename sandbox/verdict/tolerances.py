"""Per-dtype tolerances for comparing a candidate's outputs with the reference's.

Defaults are no looser than KernelBench's current ones (fp32 1e-4, fp16/bf16
1e-2, used as both atol and rtol). Integer and boolean outputs must match
exactly. A caller may tighten or loosen them per request; the judge reports
which were used.

The default atol scales with the output (``for_output``): it is the dtype's
atol times the output's root-mean-square value where that is below 1. A
softmax over 16k columns has values near 6e-5, under an atol of 1e-4: any
output of the right shape, zeros included, would be "close". Scaled, the
absolute slack stays a fixed share of what the output holds, and rtol is
unchanged; where the float32 reference is itself that far from its float64
run, the judge's calibration (``compare.calibrated_close``) widens it again.
"""

from __future__ import annotations

import torch

DEFAULT: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (1e-2, 1e-2),
}


def for_dtype(dtype: torch.dtype, override: tuple[float, float] | None = None) -> tuple[float, float]:
    """(atol, rtol); (0, 0) for exact types."""
    if override is not None and dtype.is_floating_point:
        return override
    return DEFAULT.get(dtype, (1e-2, 1e-2) if dtype.is_floating_point else (0.0, 0.0))


CHUNK = 1 << 20  # float64 temporaries of 8 MB, as compare.mismatch


def magnitude(r: torch.Tensor) -> float:
    """The root-mean-square of the finite values of ``r`` (1.0 for none), a chunk at a time."""
    flat, total, count = r.detach().reshape(-1), 0.0, 0
    for start in range(0, flat.numel(), CHUNK):
        part = flat[start:start + CHUNK].to(torch.float64)
        part = part[torch.isfinite(part)]
        total += float(part.square().sum())
        count += part.numel()
    return (total / count) ** 0.5 if count else 1.0


def for_output(r: torch.Tensor, override: tuple[float, float] | None = None) -> tuple[float, float]:
    """(atol, rtol) for comparing with the reference output ``r``: ``for_dtype``'s, the
    default atol scaled by ``r``'s magnitude where below 1 (the module docstring); an
    override as given."""
    atol, rtol = for_dtype(r.dtype, override)
    if override is None and r.dtype.is_floating_point and atol > 0 and r.numel():
        scale = magnitude(r)
        if 0.0 < scale < 1.0:
            atol *= scale
    return atol, rtol


def describe() -> dict[str, dict[str, float]]:
    """The dtypes' defaults (before ``for_output`` scales atol)."""
    return {str(d).removeprefix("torch."): {"atol": a, "rtol": r} for d, (a, r) in DEFAULT.items()}

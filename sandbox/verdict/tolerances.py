"""Per-dtype tolerances for comparing a candidate's outputs with the reference's.

Defaults are no looser than KernelBench's current ones (fp32 1e-4, fp16/bf16
1e-2, used as both atol and rtol). Integer and boolean outputs must match
exactly. A caller may tighten or loosen them per request; the judge reports
which were used.
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


def describe() -> dict[str, dict[str, float]]:
    return {str(d).removeprefix("torch."): {"atol": a, "rtol": r} for d, (a, r) in DEFAULT.items()}

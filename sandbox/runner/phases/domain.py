"""Inputs that exercise a problem's domain, not only ``get_inputs``' own draw.

KernelBench's inputs are almost always ``torch.randn``: values within a few units of 0.
A candidate whose math holds only there (an exponential by a cubic polynomial, a softmax
without its max subtracted, a reciprocal square root by one Newton step from a guess
tuned for values near 1) matches the reference on every such draw. The judge's
``domain`` trials run the problem at its default sizes on ``get_inputs``' tensors
stretched: every floating-point input scaled by ``SCALE``, and about one element in
``OUTLIER_EVERY`` replaced by ``OUTLIER`` times the largest magnitude of the scaled
tensor, its sign kept (a positive input stays positive). Integer and boolean inputs
(indices, masks) stay as drawn.

A reference that cannot run on such inputs, or whose outputs are not all finite there
(a product that overflows, a probability outside [0, 1]), has no domain to compare on:
the trial is skipped, never failed. Both jobs see the same tensors: the candidate gets
the reference's inputs, as on every trial.
"""

from __future__ import annotations

from typing import Any

import torch

SCALE = 8.0
OUTLIER = 4.0
OUTLIER_EVERY = 1024


def stretch(inputs: list[Any], seed: int) -> list[Any]:
    """``inputs`` with every floating-point tensor scaled and given outliers (the module
    docstring); the others as they are. Layout (strides) is kept."""
    gen = torch.Generator().manual_seed(int(seed))
    out: list[Any] = []
    for x in inputs:
        if not (isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel()):
            out.append(x)
            continue
        with torch.no_grad():
            y = x * SCALE
            pick = torch.rand(x.shape, generator=gen) < 1.0 / OUTLIER_EVERY
            if not bool(pick.any()):
                pick.view(-1)[torch.randint(x.numel(), (1,), generator=gen)] = True
            peak = float(y.abs().max()) * OUTLIER
            if peak > 0:  # written into ``y``: its strides stay the input's
                y.copy_(torch.where(pick.to(y.device), torch.where(y < 0, -peak, peak).to(y.dtype), y))
        out.append(y.requires_grad_(x.requires_grad) if x.requires_grad else y)
    return out


def finite(out: Any) -> bool:
    """Whether every floating-point tensor in a (nested) output holds finite values only."""
    if isinstance(out, torch.Tensor):
        return not out.is_floating_point() or bool(torch.isfinite(out).all())
    if isinstance(out, (list, tuple)):
        return all(finite(o) for o in out)
    if isinstance(out, dict):
        return all(finite(o) for o in out.values())
    return True

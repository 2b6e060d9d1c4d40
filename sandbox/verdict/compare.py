"""Comparisons the judge makes itself, on plain tensors it received."""

from __future__ import annotations

from typing import Any

import torch

from . import tolerances

PLAIN_TENSOR = "torch.Tensor"


def format_problems(ref_struct: str, ref: list[Any], struct: str, outs: list[Any], kinds: list[str]) -> list[str]:
    """Structure, exact type, shape and dtype; empty when the outputs are well-formed."""
    if struct != ref_struct:
        return [f"returned {struct}, the reference returns {ref_struct}"]
    problems = []
    for i, (r, o, kind) in enumerate(zip(ref, outs, kinds)):
        label = f"output {i}" if len(ref) > 1 else "output"
        if kind != PLAIN_TENSOR or not isinstance(o, torch.Tensor):
            problems.append(f"{label} is a {kind}, not a plain torch.Tensor")
        elif o.shape != r.shape:
            problems.append(f"{label} has shape {tuple(o.shape)}, expected {tuple(r.shape)}")
        elif o.dtype != r.dtype:
            problems.append(f"{label} has dtype {o.dtype}, expected {r.dtype}")
    return problems


def nonfinite_problems(ref: list[Any], outs: list[Any]) -> list[str]:
    problems = []
    for i, (r, o) in enumerate(zip(ref, outs)):
        if not (isinstance(o, torch.Tensor) and o.dtype.is_floating_point):
            continue
        if bool(torch.isfinite(o).all()):  # one pass, no mask kept: the usual case
            continue
        bad = ~torch.isfinite(o) & torch.isfinite(r)
        if bad.any():
            problems.append(f"output {i} has {int(bad.sum())} NaN/Inf value(s) where the reference has none")
    return problems


# Elements compared per step in float64: 8 MB temporaries stay under glibc's mmap ceiling
# and are reused, where whole-tensor ones (44 MB for a 22 MB output) were mapped and
# faulted in afresh for every output the judge compared (~0.2 s each).
CHUNK = 1 << 20


# A float32 chunk passes without float64 when every |o - r| is within this share of its
# bound: float32's rounding of the difference and the bound is ~1e-7 of them, so such a
# pass is a pass in float64 too. Anything else (NaN, inf, a near miss) is decided in float64.
FLOAT32_MARGIN = 0.999


def all_close(o: torch.Tensor, r: torch.Tensor, atol: float, rtol: float) -> bool:
    """``torch.isclose(o, r, atol, rtol, equal_nan=True).all()`` as in float64, a chunk at a time."""
    of, rf = o.reshape(-1), r.reshape(-1)
    plain32 = of.dtype == torch.float32 and rf.dtype == torch.float32
    for start in range(0, of.numel(), CHUNK):
        a, b = of[start:start + CHUNK], rf[start:start + CHUNK]
        if plain32 and bool((a - b).abs_().le_(b.abs().mul_(rtol).add_(atol).mul_(FLOAT32_MARGIN)).all()):
            continue
        if not bool(torch.isclose(a.to(torch.float64), b.to(torch.float64), atol=atol, rtol=rtol,
                                  equal_nan=True).all()):
            return False
    return True


def value_problems(ref: list[Any], outs: list[Any], override: tuple[float, float] | None = None) -> list[str]:
    problems = []
    for i, (r, o) in enumerate(zip(ref, outs)):
        atol, rtol = tolerances.for_dtype(r.dtype, override)
        if all_close(o, r, atol, rtol):
            continue
        o64, r64 = o.to(torch.float64), r.to(torch.float64)
        close = torch.isclose(o64, r64, atol=atol, rtol=rtol, equal_nan=True)
        if not bool(close.all()):
            diff = (o64 - r64).abs().nan_to_num(nan=float("inf"))
            where = int(diff.flatten().argmax())
            problems.append(
                f"output {i}: {int((~close).sum())} of {close.numel()} values differ beyond atol={atol}, rtol={rtol} "
                f"(max abs diff {float(diff.max()):.3g} at flat index {where})"
            )
    return problems


def output_problems(ref_struct: str, ref: list[Any], struct: str, outs: list[Any], kinds: list[str],
                    override: tuple[float, float] | None = None) -> tuple[list[str], list[str], list[str]]:
    """(format, non-finite, values) problems, each checked only when the one before is clean."""
    fmt = format_problems(ref_struct, ref, struct, outs, kinds)
    if fmt:
        return fmt, [], []
    return fmt, nonfinite_problems(ref, outs), value_problems(ref, outs, override)


def changed_inputs(before: list[Any], after: list[Any]) -> list[int]:
    changed = []
    for i, (b, a) in enumerate(zip(before, after)):
        if isinstance(b, torch.Tensor):
            same = isinstance(a, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype and torch.equal(
                torch.nan_to_num(a), torch.nan_to_num(b)) and bool((a.isnan() == b.isnan()).all()) \
                if b.dtype.is_floating_point else isinstance(a, torch.Tensor) and torch.equal(a, b)
            if not same:
                changed.append(i)
    return changed

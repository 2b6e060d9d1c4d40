"""Comparisons the judge makes itself, on plain tensors it received."""

from __future__ import annotations

from dataclasses import dataclass
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


def _all_finite(o: torch.Tensor) -> bool:
    """Every value finite. A sum holding a NaN or an infinity is not finite, so a finite sum
    settles it in one read and no mask (0.02 s for 470 MB, against 0.4 s for ``isfinite``
    over the whole tensor); a sum that overflowed is decided chunk by chunk."""
    if o.numel() == 0 or bool(torch.isfinite(o.sum())):
        return True
    flat = o.reshape(-1)
    return all(bool(torch.isfinite(flat[i:i + CHUNK]).all()) for i in range(0, flat.numel(), CHUNK))


def nonfinite_problems(ref: list[Any], outs: list[Any], first: bool = False) -> list[str]:
    """Outputs with NaN/Inf where the reference has none, counted a chunk at a time (whole-
    tensor masks of a GB output were two 117 MB temporaries, faulted in afresh per output);
    ``first``: whether there are any, from the first chunk that has one (a lower bound)."""
    problems = []
    for i, (r, o) in enumerate(zip(ref, outs)):
        if not (isinstance(o, torch.Tensor) and o.dtype.is_floating_point):
            continue
        if _all_finite(o):
            continue
        of, rf = o.reshape(-1), r.reshape(-1)
        bad = 0
        for start in range(0, of.numel(), CHUNK):
            bad += int((~torch.isfinite(of[start:start + CHUNK]) & torch.isfinite(rf[start:start + CHUNK])).sum())
            if first and bad:
                break
        if bad:
            problems.append(f"output {i} has {'at least ' if first else ''}{bad} NaN/Inf value(s) where the "
                            "reference has none")
            if first:
                break
    return problems


# Elements compared per step in float64: 8 MB temporaries stay under glibc's mmap ceiling
# and are reused, where whole-tensor ones (44 MB for a 22 MB output) were mapped and
# faulted in afresh for every output the judge compared (~0.2 s each).
CHUNK = 1 << 20


# A float32 chunk passes without float64 when every |o - r| is within this share of its
# bound: float32's rounding of the difference and the bound is ~1e-7 of them, so such a
# pass is a pass in float64 too. Anything else (NaN, inf, a near miss) is decided in float64.
FLOAT32_MARGIN = 0.999


def _bad_chunk(a: torch.Tensor, b: torch.Tensor, atol: float, rtol: float, plain32: bool) -> torch.Tensor | None:
    """The chunk's elements not close (a float64 mask), or None when all are."""
    if plain32 and bool((a - b).abs_().le_(b.abs().mul_(rtol).add_(atol).mul_(FLOAT32_MARGIN)).all()):
        return None
    close = torch.isclose(a.to(torch.float64), b.to(torch.float64), atol=atol, rtol=rtol, equal_nan=True)
    return None if bool(close.all()) else ~close


def mismatch(o: torch.Tensor, r: torch.Tensor, atol: float, rtol: float,
             first: bool = False) -> tuple[int, float, int] | None:
    """None when ``torch.isclose(o, r, atol, rtol, equal_nan=True).all()`` as in float64;
    else (values not close, the largest |o - r| (inf for NaN), its flat index), a chunk
    at a time (whole-tensor float64 temporaries of a GB output were 4 x 2 GB). With
    ``first``, the counts of the first chunk that differs only (a yes/no question)."""
    of, rf = o.reshape(-1), r.reshape(-1)
    if of.dtype == rf.dtype and torch.equal(of, rf):
        return None  # bit for bit (an elementwise kernel's usual case): one read, stopping at a difference
    plain32 = of.dtype == torch.float32 and rf.dtype == torch.float32
    count, worst, where = 0, -1.0, 0
    for start in range(0, of.numel(), CHUNK):
        a, b = of[start:start + CHUNK], rf[start:start + CHUNK]
        bad = _bad_chunk(a, b, atol, rtol, plain32)
        if bad is None:
            continue
        count += int(bad.sum())
        diff = (a.to(torch.float64) - b.to(torch.float64)).abs_().nan_to_num_(nan=float("inf"))
        at = int(diff.argmax())
        if float(diff[at]) > worst:
            worst, where = float(diff[at]), start + at
        if first:
            break
    return None if count == 0 else (count, worst, where)


def all_close(o: torch.Tensor, r: torch.Tensor, atol: float, rtol: float) -> bool:
    """``torch.isclose(o, r, atol, rtol, equal_nan=True).all()`` as in float64, a chunk at a time."""
    return mismatch(o, r, atol, rtol, first=True) is None


# The reference's own rounding (issue 28: honest kernels rejected). Where the float32 reference
# is itself off from its float64 run by more than the tolerance (a sum over thousands of terms),
# a candidate passes when every value is within the tolerance plus CALIBRATED_K times the float32
# reference's worst deviation from the float64 value. Past CALIBRATED_CAP of the float64 output's
# largest magnitude (at least 1) the reference is ill-conditioned (issue 57: level 3's
# EfficientNetB2 and UNetSoftmax): any kernel summing in another order is that far off somewhere.
# There the candidate is judged as the float32 reference would be, against the float64 output: its
# worst and its root-mean-square error each within CALIBRATED_K times the reference's own (an
# answer that is wrong everywhere has a far larger rms than rounding that flips a few values). Past
# UNDETERMINED of the float64 output's rms, the reference's rms error is the output's own size:
# float32 does not determine the output, and no value can be judged.
CALIBRATED_K = 2.0
CALIBRATED_CAP = 1e-2
UNDETERMINED = 0.25


@dataclass(frozen=True)
class Conditioning:
    """How far the float32 reference is from its float64 run: worst and rms deviation, and
    the float64 output's largest magnitude and rms."""

    worst: float
    rms: float
    top: float
    size: float

    @classmethod
    def of(cls, r: torch.Tensor, r64: torch.Tensor) -> Conditioning:
        if not r.numel():
            return cls(0.0, 0.0, 0.0, 0.0)
        dev = r.to(torch.float64) - r64
        return cls(float(dev.abs().max()), float(dev.square().mean().sqrt()), float(r64.abs().max()),
                   float(r64.square().mean().sqrt()))

    @property
    def ill(self) -> bool:
        return self.worst > CALIBRATED_CAP * max(1.0, self.top)

    @property
    def determined(self) -> bool:
        return self.rms <= UNDETERMINED * self.size

    def describe(self) -> str:
        said = (f"the reference is ill-conditioned: its float32 output is {self.worst:.3g} from its float64 run "
                f"at worst ({self.rms:.3g} rms), on outputs of {self.top:.3g} at most ({self.size:.3g} rms)")
        return said + ("" if self.determined else "; float32 does not determine its output, so no kernel's values "
                       "can be judged")


def calibrated_close(o: torch.Tensor, r: torch.Tensor, r64: Any, atol: float, rtol: float) -> bool:
    """``o`` within the tolerance of the float64 reference ``r64``, widened by the float32
    reference ``r``'s own deviation from it (``CALIBRATED_K`` times its worst); for an
    ill-conditioned reference, also its rms error within ``CALIBRATED_K`` times the reference's."""
    if not (isinstance(r64, torch.Tensor) and r64.shape == r.shape == o.shape and r.dtype.is_floating_point
            and r64.dtype == torch.float64):
        return False
    if not (bool(torch.isfinite(r64).all()) and bool(torch.isfinite(o).all())):
        return False
    cond = Conditioning.of(r, r64)
    if cond.ill and not cond.determined:
        return False
    err = o.to(torch.float64) - r64
    allowed = r64.abs().mul_(rtol).add_(atol + CALIBRATED_K * cond.worst)
    if not bool(err.abs().le_(allowed).all()):
        return False
    return not cond.ill or float(err.square().mean().sqrt()) <= atol + CALIBRATED_K * cond.rms


def could_calibrate(ref: list[Any], outs: list[Any], override: tuple[float, float] | None = None) -> bool:
    """Whether the float64 reference could turn these outputs' mismatch into a pass: floating
    outputs of the reference's shapes, finite, none off by more than the outputs' own scale
    (an ill-conditioned reference's rounding can be that large)."""
    if len(ref) != len(outs):
        return False
    for r, o in zip(ref, outs):
        if not (isinstance(r, torch.Tensor) and isinstance(o, torch.Tensor) and r.dtype.is_floating_point
                and o.shape == r.shape and o.dtype == r.dtype):
            return False
        if not r.numel():
            continue
        atol, rtol = tolerances.for_output(r, override)
        top = float(r.abs().max())
        worst = float((o.to(torch.float64) - r.to(torch.float64)).abs().max())
        if not worst <= atol + rtol * top + CALIBRATED_K * max(1.0, top):
            return False  # NaN included
    return True


def value_problems(ref: list[Any], outs: list[Any], override: tuple[float, float] | None = None,
                   first: bool = False, ref64: list[Any] | None = None) -> list[str]:
    """Outputs not close to the reference's; ``first``: whether any is, counted in the
    first chunk that differs (the message's counts are then a lower bound). ``ref64``:
    the reference's outputs in float64, where the judge ran it so (``calibrated_close``)."""
    problems = []
    for i, (r, o) in enumerate(zip(ref, outs)):
        if o.dtype == r.dtype and o.shape == r.shape and torch.equal(o, r):
            continue  # bit for bit: no tolerance to work out
        atol, rtol = tolerances.for_output(r, override)
        found = mismatch(o, r, atol, rtol, first)
        if found is None:
            continue
        if ref64 is not None and i < len(ref64) and calibrated_close(o, r, ref64[i], atol, rtol):
            continue
        count, worst, where = found
        problems.append(
            f"output {i}: {'at least ' if first else ''}{count} of {r.numel()} values differ beyond "
            f"atol={atol:.3g}, rtol={rtol} (max abs diff {worst:.3g} at flat index {where})" + _conditioning(r, ref64, i)
        )
        if first:
            break
    return problems


def is_float_pair(r: Any, r64: Any) -> bool:
    """A float32 output and its float64 run, of one shape."""
    return (isinstance(r, torch.Tensor) and isinstance(r64, torch.Tensor) and r.dtype.is_floating_point
            and r64.dtype == torch.float64 and r64.shape == r.shape)


def _conditioning(r: torch.Tensor, ref64: list[Any] | None, i: int) -> str:
    """Where the judge ran the reference in float64 and found it ill-conditioned: that, said."""
    r64 = ref64[i] if ref64 is not None and i < len(ref64) else None
    if not is_float_pair(r, r64):
        return ""
    cond = Conditioning.of(r, r64)
    return f"; {cond.describe()}" if cond.ill else ""


def output_problems(ref_struct: str, ref: list[Any], struct: str, outs: list[Any], kinds: list[str],
                    override: tuple[float, float] | None = None, first: bool = False,
                    ref64: list[Any] | None = None) -> tuple[list[str], list[str], list[str]]:
    """(format, non-finite, values) problems, each checked only when the one before is
    clean; ``first``: only whether there are value problems (``value_problems``)."""
    fmt = format_problems(ref_struct, ref, struct, outs, kinds)
    if fmt:
        return fmt, [], []
    return fmt, nonfinite_problems(ref, outs, first), value_problems(ref, outs, override, first, ref64)


def changed_inputs(before: list[Any], after: list[Any]) -> list[int]:
    changed = []
    for i, (b, a) in enumerate(zip(before, after)):
        if isinstance(b, torch.Tensor):
            if isinstance(a, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b):
                continue  # the usual case, in one pass (NaNs, never equal to themselves, go on below)
            same = isinstance(a, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype and torch.equal(
                torch.nan_to_num(a), torch.nan_to_num(b)) and bool((a.isnan() == b.isnan()).all()) \
                if b.dtype.is_floating_point else isinstance(a, torch.Tensor) and torch.equal(a, b)
            if not same:
                changed.append(i)
    return changed

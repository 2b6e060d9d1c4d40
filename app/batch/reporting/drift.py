"""The best kernel's own time in the search's judgement against the final evaluation's
(issue 56): a speedup is a ratio, and either side of it can move between two runs. Where
the ratios disagree by more than ``AGREE``, the note says whose time moved: the kernel's,
eager's, or both."""

from __future__ import annotations

from typing import Any

AGREE = 0.10  # times (and ratios) within 10% of each other agree


def _ms(timing: dict[str, Any], party: str) -> float | None:
    value = (timing.get(party) or {}).get("median_ms")
    return float(value) if value else None


def _change(before: float | None, after: float | None) -> float | None:
    return None if not before or after is None else after / before - 1.0


def drift(search_timing: dict[str, Any], final_timing: dict[str, Any]) -> dict[str, Any] | None:
    """The two judgements' times of kernel and eager, their relative changes, and a note;
    None where either judgement timed no kernel."""
    k0, k1 = _ms(search_timing, "candidate"), _ms(final_timing, "candidate")
    if k0 is None or k1 is None:
        return None
    e0, e1 = _ms(search_timing, "baseline_eager"), _ms(final_timing, "baseline_eager")
    kernel, eager = _change(k0, k1), _change(e0, e1)
    ratio = None if not (e0 and e1) else _change(e0 / k0, e1 / k1)
    out: dict[str, Any] = {"kernel_ms": [k0, k1], "eager_ms": [e0, e1], "kernel_change": kernel,
                           "eager_change": eager, "ratio_change": ratio,
                           "kernel_agrees": abs(kernel) <= AGREE, "note": ""}
    if ratio is not None and abs(ratio) > AGREE:
        moved = [name for name, c in (("the kernel", kernel), ("eager", eager)) if c is not None and abs(c) > AGREE]
        who = " and ".join(moved) if moved else "neither alone (both moved a little)"
        out["note"] = (f"search {e0 / k0:.2f}x, final {e1 / k1:.2f}x eager: {who} moved "
                       f"(kernel {k0:.4g} -> {k1:.4g} ms, eager {e0:.4g} -> {e1:.4g} ms)")
    elif not out["kernel_agrees"]:
        out["note"] = f"the kernel's time moved {kernel:+.0%} ({k0:.4g} -> {k1:.4g} ms) with eager's: the ratio held"
    return out

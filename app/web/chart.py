"""Best speedup over rounds, as coordinates for an inline SVG drawn by the
template (no script, no chart library). None when no candidate was timed on a
GPU: CPU runs report no speedup, and the page says so instead of drawing."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

W, H = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 48, 16, 12, 34


@dataclass
class Chart:
    width: int = W
    height: int = H
    line: str = ""  # polyline points of the best speedup so far
    dots: list[dict[str, Any]] = field(default_factory=list)  # every timed passing candidate
    yticks: list[tuple[float, str]] = field(default_factory=list)
    xticks: list[tuple[float, str]] = field(default_factory=list)
    baseline_y: float = 0.0  # the reference's own speed (1×)
    plot: tuple[int, int, int, int] = (LEFT, TOP, W - RIGHT, H - BOTTOM)


def _nice_step(top: float) -> float:
    raw = top / 4
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)


def best_speedup_chart(rounds: list[dict[str, Any]]) -> Chart | None:
    timed = [(r["index"], c) for r in rounds for c in r["candidates"]
             if c["verdict"] == "pass" and c.get("speedup") is not None]
    if not timed:
        return None
    indices = [r["index"] for r in rounds]
    lo, hi = min(indices), max(indices)
    top = max(max(c["speedup"] for _, c in timed), 1.0) * 1.15
    step = _nice_step(top)
    top = step * math.ceil(top / step)
    x0, y0, x1, y1 = LEFT, TOP, W - RIGHT, H - BOTTOM

    def x(i: int) -> float:
        return (x0 + x1) / 2 if hi == lo else x0 + (i - lo) * (x1 - x0) / (hi - lo)

    def y(v: float) -> float:
        return y1 - v * (y1 - y0) / top

    chart = Chart(baseline_y=round(y(1.0), 1))
    best: float | None = None
    points = []
    for i in indices:
        for _, c in (t for t in timed if t[0] == i):
            chart.dots.append({"x": round(x(i), 1), "y": round(y(c["speedup"]), 1),
                               "label": f"round {i}, {c['attempt_id']}: {c['speedup']:.2f}×"})
            best = max(best or 0.0, c["speedup"])
        if best is not None:
            points.append(f"{x(i):.1f},{y(best):.1f}")
    chart.line = " ".join(points)
    chart.yticks = [(round(y(k * step), 1), f"{k * step:g}×") for k in range(int(round(top / step)) + 1)]
    every = max(1, math.ceil((hi - lo + 1) / 12))
    chart.xticks = [(round(x(i), 1), str(i)) for i in indices if (i - lo) % every == 0]
    return chart


@dataclass
class Curves:
    """fast_p curves: the share of records correct and faster than p×, for each p."""

    width: int = W
    height: int = H
    lines: list[dict[str, Any]] = field(default_factory=list)  # points, label, cls, dots
    yticks: list[tuple[float, str]] = field(default_factory=list)
    xticks: list[tuple[float, str]] = field(default_factory=list)
    plot: tuple[int, int, int, int] = (LEFT, TOP, W - RIGHT, H - BOTTOM)


def fast_p_curves(series: list[tuple[str, dict[str, float | None]]], p_values: list[float]) -> Curves | None:
    """One line per series (label, {"0": share, "0.5": share, ...}); None when no
    series has a value past p = 0 (no GPU timing: fast_p is null, never 0)."""
    if not p_values or not any(v is not None for _, curve in series for p, v in curve.items() if float(p) > 0):
        return None
    x0, y0, x1, y1 = LEFT, TOP, W - RIGHT, H - BOTTOM
    top = max(p_values) or 1.0

    def x(p: float) -> float:
        return round(x0 + p * (x1 - x0) / top, 1)

    def y(share: float) -> float:
        return round(y1 - share * (y1 - y0), 1)

    curves = Curves(xticks=[(x(p), f"{p:g}") for p in p_values],
                    yticks=[(y(k / 4), f"{25 * k}%") for k in range(5)])
    for n, (label, curve) in enumerate(series):
        pts = [(x(p), y(v), f"{label}: fast_{p:g} = {100 * v:.1f}%")
               for p in p_values if (v := curve.get(f"{p:g}")) is not None]
        curves.lines.append({"label": label, "cls": f"c{n % 6}", "points": " ".join(f"{a},{b}" for a, b, _ in pts),
                             "dots": pts})
    return curves

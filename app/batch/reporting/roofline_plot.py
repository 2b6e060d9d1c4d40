"""The roofline plot (issue 56): achieved GFLOP/s against arithmetic intensity (FLOPs per
byte of the problem's least traffic), both axes log, under the machine's two roofs: its
bandwidth (a slope) and its peak compute (flat). Each judged party (kernel, eager,
torch.compile) of each problem is a point; a point's height over its roof's is its
fraction of the bound. Inline SVG, no script: the batch's report.html and the dashboard's
job and batch pages draw the same one."""

from __future__ import annotations

import math
from html import escape
from typing import Any

COLOURS = {"kernel": "#2a9d4b", "eager": "#1f77b4", "compile": "#e3771b"}
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 30, 42


def points(label: str, roof: dict[str, Any]) -> list[dict[str, Any]]:
    """A judgement's roofline (``result["roofline"]``) as plot points; none where the problem
    does no FLOPs (it has no intensity to place: its fraction is of the bandwidth alone)."""
    intensity = roof.get("intensity")
    if not intensity:
        return []
    return [{"label": label, "party": party, "intensity": float(intensity), "gflops": float(p["gflops"]),
             "fraction": p.get("fraction")}
            for party, p in (roof.get("parties") or {}).items() if p.get("gflops")]


def _decades(lo: float, hi: float) -> list[float]:
    return [10.0 ** k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]


def roofline_svg(pts: list[dict[str, Any]], bandwidth_gbs: float, peak_gflops: float, title: str = "roofline",
                 width: int = 560, height: int = 320, left_out: int = 0) -> str:
    """The plot; ``left_out`` problems had no FLOPs to place (said under the plot)."""
    ridge = peak_gflops / bandwidth_gbs  # the intensity where the two roofs meet
    xs = [p["intensity"] for p in pts] + [ridge]
    ys = [p["gflops"] for p in pts] + [peak_gflops]
    x_lo, x_hi = min(xs) / 4, max(xs) * 4
    y_lo, y_hi = min(ys + [bandwidth_gbs * x_lo]) / 4, max(ys) * 2
    pw, ph = width - LEFT - RIGHT, height - TOP - BOTTOM

    def x(v: float) -> float:
        return LEFT + pw * (math.log10(v) - math.log10(x_lo)) / (math.log10(x_hi) - math.log10(x_lo))

    def y(v: float) -> float:
        v = min(max(v, y_lo), y_hi)
        return TOP + ph * (1 - (math.log10(v) - math.log10(y_lo)) / (math.log10(y_hi) - math.log10(y_lo)))

    g = [f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>']
    for v in _decades(x_lo, x_hi):
        if x_lo <= v <= x_hi:
            g.append(f'<line x1="{x(v):.1f}" y1="{TOP}" x2="{x(v):.1f}" y2="{TOP + ph}" stroke="#eee"/>'
                     f'<text x="{x(v):.1f}" y="{TOP + ph + 14}" text-anchor="middle" font-size="10">{v:g}</text>')
    for v in _decades(y_lo, y_hi):
        if y_lo <= v <= y_hi:
            g.append(f'<line x1="{LEFT}" y1="{y(v):.1f}" x2="{LEFT + pw}" y2="{y(v):.1f}" stroke="#eee"/>'
                     f'<text x="{LEFT - 4}" y="{y(v) + 4:.1f}" text-anchor="end" font-size="10">{v:g}</text>')
    roof = [(x_lo, bandwidth_gbs * x_lo), (ridge, peak_gflops), (x_hi, peak_gflops)]
    g.append('<polyline class="roof" fill="none" stroke="#c0392b" stroke-width="2" points="'
             + " ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in roof) + '"/>')
    g.append(f'<text x="{x(ridge) + 4:.1f}" y="{y(peak_gflops) - 4:.1f}" font-size="10" fill="#c0392b">'
             f"peak {peak_gflops:.4g} GFLOP/s</text>"
             f'<text x="{LEFT + 4}" y="{y(bandwidth_gbs * x_lo) - 6:.1f}" font-size="10" fill="#c0392b">'
             f"{bandwidth_gbs:.4g} GB/s</text>")
    for p in pts:
        tip = (f"{p['label']}: {p['party']} {p['gflops']:.4g} GFLOP/s at {p['intensity']:.4g} FLOP/B"
               + (f", {p['fraction']:.0%} of the bound" if p.get("fraction") is not None else ""))
        g.append(f'<circle class="point {escape(p["party"])}" cx="{x(p["intensity"]):.1f}" cy="{y(p["gflops"]):.1f}" '
                 f'r="4" fill="{COLOURS.get(p["party"], "#777")}" fill-opacity="0.8"><title>{escape(tip)}</title></circle>')
    for i, (party, colour) in enumerate(COLOURS.items()):
        g.append(f'<text x="{LEFT + pw - 4}" y="{TOP + ph - 8 - 13 * (2 - i)}" text-anchor="end" font-size="11" '
                 f'fill="{colour}">● {party}</text>')
    axis = "FLOP per byte of the least traffic (log)"
    if left_out:
        axis += f"; {left_out} problem(s) without FLOPs not placed"
    g.append(f'<text x="{LEFT + pw / 2}" y="{height - 8}" text-anchor="middle" font-size="11">{escape(axis)}</text>'
             f'<text x="12" y="{TOP + ph / 2}" text-anchor="middle" font-size="11" '
             f'transform="rotate(-90 12 {TOP + ph / 2})">GFLOP/s (log)</text>')
    return (f'<svg class="roofline" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
            f'<text x="{width / 2}" y="16" text-anchor="middle" font-weight="bold">{escape(title)}</text>'
            + "".join(g) + "</svg>")


def plot_rooflines(labelled: list[tuple[str, dict[str, Any]]], title: str) -> str:
    """Judgements' rooflines ((label, result["roofline"]) pairs) on one plot, under the first
    one's roofs; empty where none has one (no ceilings kept where they were judged)."""
    roofs = [(label, r) for label, r in labelled if r and r.get("parties")]
    if not roofs:
        return ""
    pts = [p for label, r in roofs for p in points(label, r)]
    left_out = sum(1 for _, r in roofs if not r.get("intensity"))
    first = roofs[0][1]
    if not pts:
        return ""
    return roofline_svg(pts, float(first["bandwidth_gbs"]), float(first["peak_gflops"]), title, left_out=left_out)

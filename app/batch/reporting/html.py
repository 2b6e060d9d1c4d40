"""report.html: one self-contained file. Plots are inline SVG drawn here; no
script, no stylesheet or font from anywhere else, so it opens offline and can
be mailed as is."""

from __future__ import annotations

import math
from html import escape
from typing import Any

from . import metrics as M
from .roofline_plot import plot_rooflines
from .text import fmt, headline_rows, roof_cell, sizes_note

COLOURS = {"eager": "#1f77b4", "compile": "#e3771b", "pass": "#2a9d4b", "fail": "#c0392b", "error": "#7f7f7f"}
CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}
th{background:#f4f4f4}.note{color:#8a5a00;background:#fff6e0;padding:4px 8px}svg{display:block;margin:1em 0}
.plots{display:flex;flex-wrap:wrap;gap:2em}
"""


def render_html(report: dict[str, Any]) -> str:
    m, run = report["metrics"], report["run"]
    view = m.get("best_of_k") or m["per_sample"]
    parts = [f"<h1>KForge batch report: {escape(str(run.get('suite', '')))}</h1>",
             f"<p>Generated {escape(report['generated_at'])}; provider {escape(str(run.get('provider')))}"
             f"{' / ' + escape(str(run['model'])) if run.get('model') else ''}; {m['problems']} problems x "
             f"{m['samples']} sample(s); {m['unfinished']} unfinished.</p>"]
    for title, v in [("per sample", m["per_sample"])] + ([("best of k", m["best_of_k"])] if "best_of_k" in m else []):
        parts.append(f"<h2>Metrics ({title})</h2>" + table(["metric", "value"], headline_rows(v)))
        parts += [f'<p class="note">{escape(n)}</p>' for n in v["notes"]]
    roof = plot_rooflines([(r["problem"], r.get("roofline") or {}) for r in report["problems"]],
                          "roofline: every verified problem's kernel, eager and torch.compile")
    parts.append('<h2>Plots</h2><div class="plots">' + fast_p_plot(view) + speedup_bars(report["problems"]) +
                 level_bars(m["per_level"]) + roof + "</div>")
    rows = [(r["problem"], f"{r['samples_correct']}/{r['samples']}", r.get("fastest") or "n/a",
             fmt(r["speedup_eager"], "x"),
             fmt(r["speedup_compile"], "x"), fmt(r.get("kernel_share"), "%"), roof_cell(r),
             r["held_out"] or "n/a", sizes_note(r.get("scaled")) or "default",
             str(r["tokens"]), fmt(r["cost_usd"], "$"), fmt(r["wall_s"], "s"),
             "; ".join(filter(None, [r.get("drift"), (r.get("error") or r.get("reasons") or "")[:200]])))
            for r in report["problems"]]
    parts.append("<h2>Problems</h2>" + table(
        ["problem", "correct", "fastest", "speedup eager", "speedup compile", "kernel share", "roofline", "held-out",
         "sizes",
         "tokens", "cost", "wall", "note"], rows))
    body = "\n".join(parts)
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>KForge batch report</title>'
            f"<style>{CSS}</style></head><body>\n{body}\n</body></html>\n")


def table(head: list[str], rows: list[tuple[Any, ...]]) -> str:
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    trs = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"


def _svg(width: int, height: int, title: str, inner: str) -> str:
    return (f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
            f'<text x="{width / 2}" y="16" text-anchor="middle" font-weight="bold">{escape(title)}</text>{inner}</svg>')


def fast_p_plot(view: dict[str, Any], width: int = 420, height: int = 280) -> str:
    """fast_p against p, one line per baseline; y from 0 to 1."""
    left, right, top, bottom = 45, 15, 30, 40
    pw, ph = width - left - right, height - top - bottom
    pmax = max(M.P_VALUES)
    x = lambda p: left + pw * p / pmax  # noqa: E731
    y = lambda v: top + ph * (1 - v)  # noqa: E731
    g = [f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#444"/>',
         f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#444"/>']
    for v in (0, 0.25, 0.5, 0.75, 1):
        g.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{left + pw}" y2="{y(v):.1f}" stroke="#eee"/>'
                 f'<text x="{left - 5}" y="{y(v) + 4:.1f}" text-anchor="end" font-size="11">{int(v * 100)}%</text>')
    for p in M.P_VALUES:
        g.append(f'<text x="{x(p):.1f}" y="{top + ph + 15}" text-anchor="middle" font-size="11">{p:g}</text>')
    g.append(f'<text x="{left + pw / 2}" y="{height - 5}" text-anchor="middle" font-size="12">p (speedup threshold)</text>')
    for i, base in enumerate(M.BASELINES):
        pts = [(p, v) for p, v in zip(M.P_VALUES, view[f"fast_p_{base}"].values()) if v is not None]
        colour = COLOURS[base]
        if len(pts) > 1:
            g.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="'
                     + " ".join(f"{x(p):.1f},{y(v):.1f}" for p, v in pts) + '"/>')
        g += [f'<circle cx="{x(p):.1f}" cy="{y(v):.1f}" r="3" fill="{colour}"/>' for p, v in pts]
        g.append(f'<text x="{left + pw - 5}" y="{top + 14 + 14 * i}" text-anchor="end" font-size="12" '
                 f'fill="{colour}">{base}</text>')
    if not view.get("timed", view["gpu_timed"]):
        g.append(f'<text x="{left + pw / 2}" y="{top + ph / 2}" text-anchor="middle" font-size="12" fill="#8a5a00">'
                 "no GPU timing: only fast_0 (= correctness)</text>")
    return _svg(width, height, "fast_p vs p", "".join(g))


def speedup_bars(rows: list[dict[str, Any]], width: int = 620) -> str:
    """Per-problem speedup vs eager on a log2 axis (1x marked); a problem
    without a speedup shows its verdict as a coloured stub."""
    left, top, bar, gap = 230, 30, 14, 4
    height = top + len(rows) * (bar + gap) + 30
    timed = [r["speedup_eager"] for r in rows if r.get("speedup_eager")]
    lo = min([0.5] + [s for s in timed]) if timed else 0.5
    hi = max([2.0] + [s for s in timed]) if timed else 2.0
    span = math.log2(hi) - math.log2(lo)
    pw = width - left - 60
    x = lambda s: left + pw * (math.log2(s) - math.log2(lo)) / span  # noqa: E731
    g = [f'<line x1="{x(1):.1f}" y1="{top - 4}" x2="{x(1):.1f}" y2="{height - 25}" stroke="#444" stroke-dasharray="3,3"/>',
         f'<text x="{x(1):.1f}" y="{height - 10}" text-anchor="middle" font-size="11">1x (eager)</text>']
    for i, r in enumerate(rows):
        yy = top + i * (bar + gap)
        g.append(f'<text x="{left - 6}" y="{yy + bar - 3}" text-anchor="end" font-size="11">'
                 f'{escape(r["problem"][-34:])}</text>')
        s = r.get("speedup_eager")
        if s:
            x0, x1 = sorted((x(1), x(s)))
            colour = COLOURS["eager"] if s >= 1 else COLOURS["fail"]
            g.append(f'<rect x="{x0:.1f}" y="{yy}" width="{max(x1 - x0, 1):.1f}" height="{bar}" fill="{colour}"/>'
                     f'<text x="{x1 + 4:.1f}" y="{yy + bar - 3}" font-size="11">{s:.2f}x</text>')
        else:
            verdict = "pass" if r.get("correct") else ("error" if r.get("status") == "error" else "fail")
            g.append(f'<rect x="{x(1) - 6:.1f}" y="{yy}" width="12" height="{bar}" fill="{COLOURS[verdict]}"/>'
                     f'<text x="{x(1) + 10:.1f}" y="{yy + bar - 3}" font-size="11">{verdict}, no speedup</text>')
    return _svg(width, height, "speedup vs eager per problem (log scale)", "".join(g))


def level_bars(per_level: dict[str, dict[str, Any]], width: int = 320, height: int = 220) -> str:
    left, top, bottom = 40, 30, 40
    ph = height - top - bottom
    n = max(len(per_level), 1)
    slot = (width - left - 10) / n
    g = [f'<line x1="{left}" y1="{top + ph}" x2="{width - 10}" y2="{top + ph}" stroke="#444"/>']
    for i, (level, v) in enumerate(per_level.items()):
        rate = v["correctness_rate"] or 0.0
        x0, h = left + i * slot + slot * 0.2, ph * rate
        g.append(f'<rect x="{x0:.1f}" y="{top + ph - h:.1f}" width="{slot * 0.6:.1f}" height="{h:.1f}" '
                 f'fill="{COLOURS["pass"]}"/><text x="{x0 + slot * 0.3:.1f}" y="{top + ph - h - 4:.1f}" '
                 f'text-anchor="middle" font-size="11">{100 * rate:.0f}%</text>'
                 f'<text x="{x0 + slot * 0.3:.1f}" y="{top + ph + 15}" text-anchor="middle" font-size="11">'
                 f'level {escape(level)}</text>')
    return _svg(width, height, "correctness per level", "".join(g))

"""Jinja filters: numbers, times and speedups as the pages show them."""

from __future__ import annotations

from datetime import datetime
from typing import Any


def when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") + " UTC" if value else "—"


def num(value: float | int | None, digits: int = 0) -> str:
    if value is None:
        return "—"
    return f"{value:,.{digits}f}"


def speedup(value: float | None) -> str:
    return f"{value:.2f}×" if value is not None else "—"


def spread(s: dict[str, Any] | None) -> str:
    """A speedup with its range from the quartiles: `1.84× (1.70–1.95)`."""
    if not s or s.get("value") is None:
        return "—"
    return f"{s['value']:.2f}× ({s['low']:.2f}–{s['high']:.2f})"


def ms(t: dict[str, Any] | None) -> str:
    """A median with its interquartile range: `0.0123 ms (0.0120–0.0131)`."""
    if not t or t.get("median_ms") is None:
        return "—"
    return f"{t['median_ms']:.4f} ms ({t['q1_ms']:.4f}–{t['q3_ms']:.4f})"


def usd(value: float | None) -> str:
    return f"${value:,.4f}" if value is not None else "—"


def short(job_id: str) -> str:
    return job_id[:8]


def pct(value: float | None) -> str:
    return f"{100 * value:.1f}%" if value is not None else "n/a"


def stamp(value: str | None) -> str:
    """An ISO timestamp to the minute: `2025-05-01 12:34`."""
    return value[:16].replace("T", " ") if value else "—"


def sizes(scaled: dict[str, Any] | None) -> str:
    """A batch problem's scaled sizes (report.json's `scaled`): `batch_size 4096→512, dim 393216→57344 (0.23 of
    0.25 GB)`; `default` when it ran at its own sizes."""
    if not scaled:
        return "default"
    changed = ", ".join(f"{k.replace('_kforge_dim', 'literal #')} {scaled['defaults'].get(k)}→{v}"
                        for k, v in (scaled.get("sizes") or {}).items() if v != scaled["defaults"].get(k))
    return f"{changed} ({scaled.get('bytes', 0) / 1e9:.2f} of {scaled.get('budget_gb', 0):g} GB)"

"""Per-problem changes between two batch runs (their report.json files)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .run import BatchError


def load_report(run: Path) -> dict[str, Any]:
    path = run / "report.json" if run.is_dir() else run
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BatchError(f"{path}: not a batch report ({exc})") from exc
    if not isinstance(data, dict) or "problems" not in data:
        raise BatchError(f"{path}: not a batch report")
    return data


def _ratio(a: float | None, b: float | None) -> float | None:
    return b / a if a and b else None


def change(a: dict[str, Any] | None, b: dict[str, Any] | None) -> str:
    if a is None:
        return "new"
    if b is None:
        return "dropped"
    if a["correct"] != b["correct"]:
        return "fixed" if b["correct"] else "broken"
    if (a.get("held_out"), b.get("held_out")) == ("pass", "fail"):
        return "held-out lost"
    if (a.get("held_out"), b.get("held_out")) == ("fail", "pass"):
        return "held-out gained"
    ratio = _ratio(a.get("speedup_eager"), b.get("speedup_eager"))
    if ratio is not None and ratio >= 1.05:
        return "faster"
    if ratio is not None and ratio <= 1 / 1.05:
        return "slower"
    return "same"


def compare(run_a: Path, run_b: Path) -> dict[str, Any]:
    """`rows`: per problem, both runs' verdicts and speedups, the ratio B/A and
    a one-word change (fixed, broken, faster, slower: past 5%, held-out
    gained/lost, new, dropped, same); `metrics`: the headline numbers side by side."""
    ra, rb = load_report(run_a), load_report(run_b)
    a = {r["problem"]: r for r in ra["problems"]}
    b = {r["problem"]: r for r in rb["problems"]}
    rows = []
    for name in list(a) + [n for n in b if n not in a]:
        pa, pb = a.get(name), b.get(name)
        rows.append({
            "problem": name, "change": change(pa, pb),
            "correct_a": pa and pa["correct"], "correct_b": pb and pb["correct"],
            "speedup_eager_a": pa and pa.get("speedup_eager"), "speedup_eager_b": pb and pb.get("speedup_eager"),
            "speedup_eager_ratio": _ratio(pa and pa.get("speedup_eager"), pb and pb.get("speedup_eager")),
            "speedup_compile_ratio": _ratio(pa and pa.get("speedup_compile"), pb and pb.get("speedup_compile")),
            "held_out_a": pa and pa.get("held_out"), "held_out_b": pb and pb.get("held_out"),
        })
    ma, mb = ra["metrics"]["per_sample"], rb["metrics"]["per_sample"]
    keys = ("correctness_rate", "geomean_speedup_eager", "geomean_speedup_compile")
    metrics = {k: {"a": ma.get(k), "b": mb.get(k)} for k in keys}
    metrics["fast_1_eager"] = {"a": ma["fast_p_eager"].get("1"), "b": mb["fast_p_eager"].get("1")}
    metrics["held_out_pass_rate"] = {"a": ma["held_out"]["pass_rate"], "b": mb["held_out"]["pass_rate"]}
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["change"]] = counts.get(r["change"], 0) + 1
    return {"a": str(run_a), "b": str(run_b), "metrics": metrics, "changes": counts, "rows": rows}

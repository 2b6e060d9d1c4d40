"""A batch's reports: report.json (everything), report.csv (one row per
problem), report.md and report.html (self-contained, see html.py)."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import metrics as M

CSV_FIELDS = ("problem", "level", "samples", "samples_correct", "correct", "status", "speedup_eager", "speedup_compile",
              "baseline_source", "held_out", "device", "hardware", "scaled", "sizes", "tokens", "cost_usd", "wall_s",
              "best_id", "error", "reasons")
_SLIM_DROP = ("rounds",)


def build_report(records: list[dict[str, Any]], run: dict[str, Any]) -> dict[str, Any]:
    groups = M.by_problem([r for r in records if r.get("status") in ("done", "error")])
    return {
        "format": "kforge-batch-report/1",
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "run": run,
        "metrics": M.compute(records),
        "problems": [M.problem_row(v) for v in groups.values()],
        "records": [{k: v for k, v in r.items() if k not in _SLIM_DROP} for r in records],
    }


def write_reports(out: Path, records: list[dict[str, Any]], run: dict[str, Any]) -> dict[str, Any]:
    from .html import render_html

    report = build_report(records, run)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=1))
    (out / "report.csv").write_text(render_csv(report))
    (out / "report.md").write_text(render_markdown(report))
    (out / "report.html").write_text(render_html(report))
    return report


def render_csv(report: dict[str, Any]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_FIELDS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in report["problems"]:
        flat = {**row, "scaled": bool(row.get("scaled")), "sizes": sizes_note(row.get("scaled"))}
        writer.writerow({k: "" if flat.get(k) is None else flat.get(k) for k in CSV_FIELDS})
    return buf.getvalue()


def sizes_note(scaled: dict[str, Any] | None) -> str:
    """"scaled: batch_size 4096->768, dim 393216->65536 (0.40 GB of 1 GB)"; empty when the problem ran at its sizes."""
    if not scaled:
        return ""
    changes = ", ".join(f"{k.replace('_kforge_dim', 'get_inputs literal #')} {scaled['defaults'][k]}->{v}"
                        for k, v in scaled["sizes"].items() if v != scaled["defaults"].get(k))
    return f"scaled: {changes} ({scaled['bytes'] / 1e9:.2f} GB of {scaled['budget_gb']:g} GB)"


def fmt(value: Any, kind: str = "") -> str:
    if value is None:
        return "n/a"
    if kind == "%":
        return f"{100 * value:.1f}%"
    if kind == "x":
        return f"{value:.2f}x"
    if kind == "$":
        return f"${value:.4f}"
    if kind == "s":
        return f"{value:.1f} s"
    return str(value)


def headline_rows(view: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [("correctness", f"{fmt(view['correctness_rate'], '%')} ({view['correct']}/{view['records']})")]
    for base in M.BASELINES:
        curve = view[f"fast_p_{base}"]
        rows.append((f"fast_p vs {base}", "  ".join(f"p={p}: {fmt(v, '%')}" for p, v in curve.items())))
        rows.append((f"geomean speedup vs {base} (correct only)", fmt(view[f"geomean_speedup_{base}"], "x")))
    h = view["held_out"]
    rows.append(("held-out sizes pass rate", f"{fmt(h['pass_rate'], '%')} (pass {h['pass']}, fail {h['fail']}, "
                                             f"unavailable {h['unavailable']})"))
    c = view["cost"]
    rows.append(("tokens / dollars / wall", f"{c['tokens']} / {fmt(c['usd'], '$')} / {fmt(c['wall_s'], 's')} in all; "
                                            f"per record {fmt(c['tokens_per_record'])} / {fmt(c['usd_per_record'], '$')}"
                                            f" / {fmt(c['wall_s_per_record'], 's')}"))
    return rows


def render_markdown(report: dict[str, Any]) -> str:
    m, run = report["metrics"], report["run"]
    lines = [f"# KForge batch report: {Path(str(run.get('suite', ''))).name}", "",
             f"Generated {report['generated_at']}. Provider `{run.get('provider')}`"
             f"{' / `' + str(run['model']) + '`' if run.get('model') else ''}; {m['problems']} problems x "
             f"{m['samples']} sample(s); {m['unfinished']} task(s) unfinished.", ""]
    views = [("per sample", m["per_sample"])] + ([("best of k", m["best_of_k"])] if "best_of_k" in m else [])
    for title, view in views:
        lines += [f"## Metrics ({title})", "", "| metric | value |", "| --- | --- |"]
        lines += [f"| {k} | {v} |" for k, v in headline_rows(view)]
        lines += [""] + [f"> {note}" for note in view["notes"]] + [""]
    lines += ["## Per level", "", "| level | records | correctness | fast_1 eager | geomean eager | held-out |",
              "| --- | --- | --- | --- | --- | --- |"]
    for level, v in m["per_level"].items():
        lines.append(f"| {level} | {v['records']} | {fmt(v['correctness_rate'], '%')} | "
                     f"{fmt(v['fast_p_eager']['1'], '%')} | {fmt(v['geomean_speedup_eager'], 'x')} | "
                     f"{fmt(v['held_out']['pass_rate'], '%')} |")
    lines += ["", "## Problems", "",
              "| problem | correct | speedup eager | speedup compile | held-out | tokens | cost | wall | note |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in report["problems"]:
        note = "; ".join(filter(None, [sizes_note(r.get("scaled")), (r.get("error") or r.get("reasons") or "")[:120]]))
        note = note.replace("|", "/").replace("\n", " ")
        lines.append(f"| {r['problem']} | {r['samples_correct']}/{r['samples']} | {fmt(r['speedup_eager'], 'x')} | "
                     f"{fmt(r['speedup_compile'], 'x')} | {r['held_out'] or 'n/a'} | {r['tokens']} | "
                     f"{fmt(r['cost_usd'], '$')} | {fmt(r['wall_s'], 's')} | {note} |")
    lines += ["", "Definitions: see `app/batch/metrics.py` (fast_0 equals the correctness rate; "
              "speedups are measured on a GPU, or for native kernels on the CPU (backend cpu); null otherwise)."]
    return "\n".join(lines) + "\n"

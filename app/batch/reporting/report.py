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
from .html import render_html
from .text import fmt, headline_rows, roof_cell, sizes_note

CSV_FIELDS = ("problem", "level", "samples", "samples_correct", "correct", "status", "fastest", "speedup_eager",
              "speedup_compile", "baseline_source", "kernel_share", "roofline_kernel", "roofline_eager",
              "roofline_compile", "bound_by", "drift", "held_out", "device", "hardware", "scaled", "sizes", "tokens",
              "cost_usd", "wall_s", "best_id", "recommendation", "error", "reasons")
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


def render_markdown(report: dict[str, Any]) -> str:
    m, run = report["metrics"], report["run"]
    lines = [f"# KForge batch report: {Path(str(run.get('suite', ''))).name}", "",
             f"Generated {report['generated_at']}. Provider `{run.get('provider')}`"
             f"{' / `' + str(run['model']) + '`' if run.get('model') else ''}; knowledge base "
             f"`{run.get('kb', 'off')}`; {m['problems']} problems x "
             f"{m['samples']} sample(s); {m['unfinished']} task(s) unfinished.", ""]
    views = [("per sample", m["per_sample"])] + ([("best of k", m["best_of_k"])] if "best_of_k" in m else [])
    for title, view in views:
        lines += [f"## Metrics ({title})", "", "| metric | value |", "| --- | --- |"]
        lines += [f"| {k} | {v} |" for k, v in headline_rows(view)]
        lines += [""] + [f"> {note}" for note in view["notes"]] + [""]
    lines += ["## Per level", "", "| level | records | correctness | fast_1 eager | geomean eager | "
              "geomean roofline kernel / eager / compile | held-out |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for level, v in m["per_level"].items():
        roof = v.get("geomean_roofline") or {}
        lines.append(f"| {level} | {v['records']} | {fmt(v['correctness_rate'], '%')} | "
                     f"{fmt(v['fast_p_eager']['1'], '%')} | {fmt(v['geomean_speedup_eager'], 'x')} | "
                     f"{' / '.join(fmt(roof.get(p), '%') for p in M.ROOF_PARTIES)} | "
                     f"{fmt(v['held_out']['pass_rate'], '%')} |")
    lines += ["", "## Problems", "",
              "| problem | correct | fastest | speedup eager | speedup compile | kernel share | roofline | held-out | "
              "tokens | cost | wall | note |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in report["problems"]:
        note = "; ".join(filter(None, [sizes_note(r.get("scaled")), r.get("drift") or "",
                                       (r.get("error") or r.get("reasons") or "")[:120]]))
        note = note.replace("|", "/").replace("\n", " ")
        lines.append(f"| {r['problem']} | {r['samples_correct']}/{r['samples']} | {r.get('fastest') or 'n/a'} | "
                     f"{fmt(r['speedup_eager'], 'x')} | "
                     f"{fmt(r['speedup_compile'], 'x')} | {fmt(r.get('kernel_share'), '%')} | {roof_cell(r)} | "
                     f"{r['held_out'] or 'n/a'} | {r['tokens']} | "
                     f"{fmt(r['cost_usd'], '$')} | {fmt(r['wall_s'], 's')} | {note} |")
    lines += ["", "Definitions: see `app/batch/reporting/metrics.py` (fast_0 equals the correctness rate; "
              "speedups are measured on a GPU, or for native kernels on the CPU (backend cpu); null otherwise; "
              "kernel share: the share of the reference's FLOPs done by the best kernel's own kernels, not torch; "
              "roofline: each one's fraction of the bound the machine's kept ceilings put on the problem's least work "
              "(`kforge ceilings`), and what bounds it; "
              "fastest: which of the kernel, eager PyTorch and torch.compile the final evaluation measured fastest)."]
    return "\n".join(lines) + "\n"

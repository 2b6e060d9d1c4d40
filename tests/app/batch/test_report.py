"""Report files: JSON, CSV (one row per problem), Markdown, self-contained HTML."""

from __future__ import annotations

import csv
import json
import re

from app.batch.reporting.report import write_reports
from tests.app.batch.records import gpu_run, record


def _check_html(text: str) -> None:
    assert text.startswith("<!doctype html>") and text.count("<svg") == 3
    assert not re.search(r"https?://", text), "the report must not reach anything outside the file"
    assert "<script" not in text and "<link" not in text and "src=" not in text


def test_gpu_report_files(tmp_path):
    records = gpu_run() + [record("level1/1_a", eager=1.0, compile_=0.4, sample=1),
                           record("level1/2_b", correct=False, sample=1), record("level2/1_c", sample=1, eager=1.3,
                                                                                    compile_=1.0, level=2),
                           record("level2/2_d", status="error", correct=False, sample=1, level=2)]
    report = write_reports(tmp_path, records, {"suite": "/x/problems", "provider": "openai", "model": "m<1>"})
    assert {p.name for p in tmp_path.iterdir()} == {"report.json", "report.csv", "report.md", "report.html"}
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["metrics"] == json.loads(json.dumps(report["metrics"])) and len(data["records"]) == 8
    assert data["metrics"]["best_of_k"]["correctness_rate"] == 0.75
    rows = list(csv.DictReader((tmp_path / "report.csv").open()))
    assert [r["problem"] for r in rows] == ["level1/1_a", "level1/2_b", "level2/1_c", "level2/2_d"]
    assert rows[0]["speedup_eager"] == "2.0" and rows[0]["samples_correct"] == "2" and rows[3]["correct"] == "False"
    md = (tmp_path / "report.md").read_text()
    assert "## Metrics (per sample)" in md and "## Metrics (best of k)" in md
    assert "| level1/1_a | 2/2 | torch.compile | 2.00x" in md
    html = (tmp_path / "report.html").read_text()
    _check_html(html)
    assert "m&lt;1&gt;" in html and "<polyline" in html and "2.00x" in html


def test_every_report_names_the_fastest_of_kernel_eager_and_compile(tmp_path):
    # 1_a: 2.0x eager but torch.compile 4x eager; 2_b: 0.9x eager, torch.compile faster still;
    # 1_c: 1.2x eager and 1.1x torch.compile, a kernel won; 2_d: no correct kernel.
    report = write_reports(tmp_path, gpu_run(), {"suite": "/x/problems", "provider": "offline"})
    m = report["metrics"]["per_sample"]
    assert m["fastest"] == {"kernel": 1, "eager": 0, "torch.compile": 2, "unknown": 1}
    assert m["kernel_won"] == 1 and m["kernel_beats_eager"] == 2
    by_problem = {p["problem"]: p for p in report["problems"]}
    assert [by_problem[p]["fastest"] for p in ("level1/1_a", "level1/2_b", "level2/1_c", "level2/2_d")] == [
        "torch.compile", "torch.compile", "kernel", "unknown"]
    assert by_problem["level1/2_b"]["recommendation"].startswith("Keep the reference: no kernel beat eager PyTorch "
                                                                 "(best 0.90x); torch.compile is 1.29x faster")
    rows = {r["problem"]: r for r in csv.DictReader((tmp_path / "report.csv").open())}
    assert rows["level2/1_c"]["fastest"] == "kernel"
    assert rows["level2/1_c"]["recommendation"].startswith("Use the kernel")
    md = (tmp_path / "report.md").read_text()
    assert "| level2/1_c | 1/1 | kernel | 1.20x" in md and "a kernel won 1 of 4" in md
    html = (tmp_path / "report.html").read_text()
    assert "<th>fastest</th>" in html and "a kernel won 1 of 4 (kernel 1, eager 0, torch.compile 2, unknown 1)" in html


def test_cpu_report_says_speedups_are_not_measured(tmp_path):
    write_reports(tmp_path, [record("level1/1_a", device="cpu"), record("level1/2_b", device="cpu", correct=False)],
                  {"suite": "problems", "provider": "offline"})
    html = (tmp_path / "report.html").read_text()
    _check_html(html)
    assert "no GPU timing" in html and "pass, no speedup" in html
    md = (tmp_path / "report.md").read_text()
    assert "p=0: 50.0%  p=0.5: n/a" in md and "no GPU timing" in md
    assert json.loads((tmp_path / "report.json").read_text())["metrics"]["per_sample"]["fast_p_eager"]["1"] is None

"""Batch metrics and every report format for the cpu backend: native kernels
timed on the CPU give real fast_p past 0 and geomeans, labelled as CPU timing
with the CPU model and threads; problems run at scaled sizes are marked, with
the sizes used. A GPU backend judged on the CPU (Triton's interpreter) still
has no speedups."""

from __future__ import annotations

import csv
import json
from html import escape

from app.batch.reporting import metrics as M
from app.batch.reporting.report import sizes_note, write_reports
from tests.app.batch.records import record

CPU = "AMD EPYC 7B13, 2 threads"
SCALED = {"budget_gb": 1.0, "bytes": 805306368, "factor": 0.2, "defaults": {"batch_size": 4096, "dim": 393216},
          "sizes": {"batch_size": 768, "dim": 65536}}


def cpu(problem: str, correct: bool = True, eager: float | None = None, compile_: float | None = None,
        **extra) -> dict:
    return {**record(problem, correct=correct, device="cpu", eager=eager, compile_=compile_), "backend": "cpu",
            "hardware": CPU, "timing_label": f"cpu wall time, {CPU}", **extra}


def cpu_run() -> list[dict]:
    return [cpu("level1/1_a", eager=3.0, compile_=1.5), cpu("level1/19_relu", eager=1.2, compile_=0.8, scaled=SCALED),
            cpu("level1/3_c", correct=False)]


def test_cpu_timed_records_give_fast_p_and_geomeans_labelled_as_cpu():
    view = M.compute(cpu_run())["per_sample"]
    assert view["timed"] and view["timing"] == "cpu" and not view["gpu_timed"]
    assert view["fast_p_eager"]["1"] == 2 / 3 and view["fast_p_eager"]["2"] == 1 / 3
    assert view["fast_p_compile"]["1"] == 1 / 3
    assert abs(view["geomean_speedup_eager"] - (3.0 * 1.2) ** 0.5) < 1e-9
    assert abs(view["geomean_speedup_compile"] - (1.5 * 0.8) ** 0.5) < 1e-9
    assert any(CPU in n and "not GPU speed" in n for n in view["notes"]), view["notes"]
    assert view["scaled"] == 1 and any("scaled-down sizes" in n for n in view["notes"])


def test_triton_on_the_cpu_stays_untimed():
    interpreted = [{**r, "backend": "triton"} for r in cpu_run()]
    view = M.compute(interpreted)["per_sample"]
    assert not view["timed"] and view["fast_p_eager"]["1"] is None and view["geomean_speedup_eager"] is None
    assert M.NO_GPU in view["notes"]


def test_every_report_marks_scaled_problems_with_their_sizes(tmp_path):
    report = write_reports(tmp_path, cpu_run(), {"suite": "/x/KernelBench", "provider": "offline", "device": "cpu",
                                                 "config": {"backend": "cpu"}, "fit_memory_gb": 1.0})
    note = "scaled: batch_size 4096->768, dim 393216->65536 (0.81 GB of 1 GB)"
    assert sizes_note(SCALED) == note
    rows = {r["problem"]: r for r in report["problems"]}
    assert rows["level1/19_relu"]["scaled"] == SCALED and rows["level1/1_a"]["scaled"] is None
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["records"][1]["scaled"]["sizes"] == {"batch_size": 768, "dim": 65536}
    table = {r["problem"]: r for r in csv.DictReader((tmp_path / "report.csv").open())}
    assert table["level1/19_relu"]["scaled"] == "True" and table["level1/19_relu"]["sizes"] == note
    assert table["level1/1_a"]["scaled"] == "False" and table["level1/1_a"]["sizes"] == ""
    assert table["level1/1_a"]["speedup_eager"] == "3.0" and table["level1/1_a"]["hardware"] == CPU
    md = (tmp_path / "report.md").read_text()
    assert note in md and "3.00x" in md and CPU in md and "n/a" not in md.split("fast_p vs eager")[1].split("\n")[0]
    html = (tmp_path / "report.html").read_text()
    assert escape(note) in html and "<polyline" in html and "no GPU timing" not in html and CPU in html

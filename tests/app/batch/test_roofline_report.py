"""Issue 56 in the batch report: each problem's fractions of its roofline bound (kernel, eager,
torch.compile), their geomean per level, the roofline plot, and the best kernel's own time in
the search against the final evaluation (which baseline moved)."""

from __future__ import annotations

import csv
import re

from app.batch.reporting.drift import drift
from app.batch.reporting.report import write_reports
from app.batch.reporting.roofline_plot import plot_rooflines
from tests.app.batch.records import record


def roof(kernel: float, eager: float, compile_: float | None = None, intensity: float | None = 0.25) -> dict:
    parties = {"kernel": {"fraction": kernel, "gflops": 40 * kernel, "gbs": 160 * kernel, "ms": 1 / kernel},
               "eager": {"fraction": eager, "gflops": 40 * eager, "gbs": 160 * eager, "ms": 1 / eager}}
    if compile_ is not None:
        parties["compile"] = {"fraction": compile_, "gflops": 40 * compile_, "gbs": 160 * compile_, "ms": 1 / compile_}
    return {"min_bytes": 4_000_000, "flops": 1_000_000 if intensity else 0, "intensity": intensity,
            "bandwidth_gbs": 160.0, "peak_gflops": 900.0, "bound_ms": 0.025, "bound_by": "memory", "parties": parties}


def with_roof(rec: dict, r: dict) -> dict:
    rec["final"]["roofline"] = r
    return rec


def test_fractions_per_problem_geomean_per_level_and_the_plot(tmp_path):
    records = [with_roof(record("level1/1_a", device="cpu", eager=2.0, compile_=1.5), roof(0.8, 0.4, 0.5)),
               with_roof(record("level1/2_b", device="cpu", eager=1.0, compile_=1.0), roof(0.2, 0.2, 0.2)),
               with_roof(record("level2/1_c", device="cpu", eager=1.1, level=2), roof(0.5, 0.45, intensity=None)),
               record("level2/2_d", device="cpu", correct=False, level=2)]
    report = write_reports(tmp_path, records, {"suite": "/x/kb", "provider": "offline"})
    rows = {r["problem"]: r for r in csv.DictReader((tmp_path / "report.csv").open())}
    assert rows["level1/1_a"]["roofline_kernel"] == "0.8" and rows["level1/1_a"]["roofline_eager"] == "0.4"
    assert rows["level1/1_a"]["roofline_compile"] == "0.5" and rows["level1/1_a"]["bound_by"] == "memory"
    assert rows["level2/2_d"]["roofline_kernel"] == ""  # wrong: no fraction
    level1 = report["metrics"]["per_level"]["1"]["geomean_roofline"]
    assert abs(level1["kernel"] - 0.4) < 1e-9 and abs(level1["eager"] - (0.4 * 0.2) ** 0.5) < 1e-9
    assert report["metrics"]["per_sample"]["roofline_records"] == 3
    md = (tmp_path / "report.md").read_text()
    (level1_line,) = [line for line in md.splitlines() if line.startswith("| 1 | 2 |")]
    assert level1_line.endswith("| 40.0% / 28.3% / 31.6% | 100.0% |")
    assert "kernel 80.0% / eager 40.0% / compile 50.0% (memory)" in md
    assert "geomean fraction of the roofline bound" in md
    html = (tmp_path / "report.html").read_text()
    svg = re.search(r'<svg class="roofline".*?</svg>', html, re.S).group(0)
    # two problems with FLOPs placed (three points each), one without said so
    assert svg.count('<circle class="point') == 6 and svg.count("point kernel") == 2
    assert "1 problem(s) without FLOPs not placed" in svg and "peak 900 GFLOP/s" in svg and "160 GB/s" in svg
    assert "level1/1_a: kernel 32 GFLOP/s at 0.25 FLOP/B, 80% of the bound" in svg


def test_a_point_at_its_roof_sits_on_the_roof_line():
    svg = plot_rooflines([("p", {**roof(1.0, 0.1), "parties": {"kernel": {"fraction": 1.0, "gflops": 40.0}}})], "t")
    roof_pts = [tuple(map(float, p.split(","))) for p in re.search(r'class="roof"[^>]*points="([^"]+)"', svg)[1].split()]
    (cx, cy), = [tuple(map(float, m)) for m in re.findall(r'cx="([\d.]+)" cy="([\d.]+)"', svg)]
    (x0, y0), (x1, y1) = roof_pts[0], roof_pts[1]  # the bandwidth slope: 160 GB/s x 0.25 FLOP/B = 40 GFLOP/s
    assert abs(cy - (y0 + (y1 - y0) * (cx - x0) / (x1 - x0))) < 1.0
    assert plot_rooflines([("p", {})], "t") == ""  # no ceilings kept: no plot


def _t(kernel: float, eager: float) -> dict:
    return {"candidate": {"median_ms": kernel}, "baseline_eager": {"median_ms": eager}}


def test_drift_names_the_baseline_that_moved():
    eager_moved = drift(_t(1.0, 0.71), _t(1.02, 0.28))  # the matrix-vector: 0.71x then 0.27x
    assert eager_moved["kernel_agrees"] and "eager moved" in eager_moved["note"] and "the kernel" not in eager_moved["note"]
    kernel_moved = drift(_t(1.0, 1.42), _t(1.45, 1.44))
    assert not kernel_moved["kernel_agrees"] and "the kernel moved" in kernel_moved["note"]
    steady = drift(_t(1.0, 3.8), _t(1.05, 3.9))
    assert steady["kernel_agrees"] and steady["note"] == ""
    both = drift(_t(1.0, 2.0), _t(1.5, 3.0))  # the ratio held, the kernel's time did not
    assert not both["kernel_agrees"] and "the ratio held" in both["note"]
    assert drift({}, _t(1.0, 1.0)) is None


def test_the_report_notes_drift(tmp_path):
    rec = record("level1/3_mv", device="cpu", eager=0.27)
    rec["drift"] = drift(_t(1.0, 0.71), _t(1.02, 0.28))
    write_reports(tmp_path, [rec], {"suite": "/x", "provider": "offline"})
    assert "search 0.71x, final 0.27x eager: eager moved" in (tmp_path / "report.md").read_text()
    assert "eager moved" in next(csv.DictReader((tmp_path / "report.csv").open()))["drift"]

"""Metric definitions: fast_p, geometric mean, nulls without GPU timing, views."""

from __future__ import annotations

import math

import pytest

from app.batch.reporting import metrics as M
from tests.app.batch.records import gpu_run, record


def test_fast_p_on_a_gpu_run_counts_correct_and_faster_than_p_over_all_records():
    view = M.summarize(gpu_run())
    assert view["correctness_rate"] == 0.75 and view["gpu_timed"] and view["notes"] == []
    assert view["fast_p_eager"] == {"0": 0.75, "0.5": 0.75, "0.8": 0.75, "1": 0.5, "1.5": 0.25, "2": 0.0}
    assert view["fast_p_compile"] == {"0": 0.75, "0.5": 0.5, "0.8": 0.25, "1": 0.25, "1.5": 0.0, "2": 0.0}


def test_fast_0_equals_the_correctness_rate():
    for records in (gpu_run(), [record("a", device="cpu"), record("b", correct=False, device="cpu")]):
        view = M.summarize(records)
        assert view["fast_p_eager"]["0"] == view["fast_p_compile"]["0"] == view["correctness_rate"]


def test_geomean_over_correct_records_only():
    view = M.summarize(gpu_run())
    assert view["geomean_speedup_eager"] == pytest.approx((2.0 * 0.9 * 1.2) ** (1 / 3))
    assert view["geomean_speedup_compile"] == pytest.approx((0.5 * 0.7 * 1.1) ** (1 / 3))
    assert M.geomean([]) is None and M.geomean([None]) is None
    assert M.geomean([4.0, 0.25]) == pytest.approx(1.0)


def test_cpu_runs_report_null_not_zero_for_p_above_0():
    records = [record("a", device="cpu"), record("b", device="cpu", correct=False)]
    view = M.summarize(records)
    assert view["correctness_rate"] == 0.5 and not view["gpu_timed"]
    assert view["fast_p_eager"]["0"] == 0.5
    assert all(view["fast_p_eager"][k] is None and view["fast_p_compile"][k] is None
               for k in ("0.5", "0.8", "1", "1.5", "2"))
    assert view["geomean_speedup_eager"] is None
    assert any("no GPU timing" in n for n in view["notes"])


def test_a_correct_record_without_a_compile_speedup_counts_as_not_fast_and_is_noted():
    records = [record("a", eager=2.0, compile_=None), record("b", eager=3.0, compile_=3.0)]
    view = M.summarize(records)
    assert view["fast_p_compile"]["1"] == 0.5 and view["fast_p_eager"]["1"] == 1.0
    assert any("no speedup vs compile" in n for n in view["notes"])


def test_errors_stay_in_the_denominator_and_unfinished_tasks_are_counted():
    records = gpu_run() + [record("level3/1_e", correct=False, status="error", level=3, held=None),
                           {"problem": "level3/2_f", "sample": 0, "level": 3, "status": None}]
    m = M.compute(records)
    assert m["per_sample"]["records"] == 5 and m["per_sample"]["errors"] == 1
    assert m["per_sample"]["correctness_rate"] == 0.6 and m["unfinished"] == 1
    assert set(m["per_level"]) == {"1", "2", "3"} and m["per_level"]["3"]["correctness_rate"] == 0.0


def test_held_out_rate_over_correct_records_whose_held_out_ran():
    h = M.summarize(gpu_run())["held_out"]
    assert h == {"pass": 1, "fail": 1, "unavailable": 1, "pass_rate": 0.5}


def test_best_of_k_and_per_sample_views():
    records = [record("p1", correct=False, sample=0, eager=None), record("p1", eager=1.5, sample=1),
               record("p2", correct=False, sample=0), record("p2", correct=False, sample=1)]
    m = M.compute(records)
    assert m["samples"] == 2 and m["per_sample"]["correctness_rate"] == 0.25
    assert m["best_of_k"]["correctness_rate"] == 0.5 and m["best_of_k"]["fast_p_eager"]["1"] == 0.5
    row = M.problem_row([r for r in records if r["problem"] == "p1"])
    assert row["samples_correct"] == 1 and row["correct"] and row["speedup_eager"] == 1.5
    assert row["tokens"] == 200 and math.isclose(row["cost_usd"], 0.02)


def test_single_sample_runs_have_no_best_of_k_view():
    assert "best_of_k" not in M.compute(gpu_run())

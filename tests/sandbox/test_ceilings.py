"""The machine's ceilings (``sandbox/ceilings.py``) and each timing against them
(``sandbox/verdict/roofline.py``), issue 56."""

from __future__ import annotations

import json

import pytest

from sandbox import ceilings
from sandbox.verdict import roofline
from sandbox.verdict.checks import FAIL, PASS, SKIPPED


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch, tmp_path):
    monkeypatch.setenv("KFORGE_JUDGE_BASELINE_CACHE", str(tmp_path))
    monkeypatch.setattr(ceilings, "ARRAY_BYTES", 16 << 20)
    monkeypatch.setattr(ceilings, "GEMM_N", 256)
    monkeypatch.setattr(ceilings, "REPS", 3)
    return tmp_path


def test_measured_once_then_kept_per_machine_and_threads(small) -> None:
    first = ceilings.ceilings(1)
    assert first["cached"] is False and first["machine"]["threads"] == 1
    for name in ("read", "write", "copy", "triad"):
        r = first["bandwidth_gbs"][name]
        assert 0 < r["median"] <= r["best"] and r["spread"] >= 0, (name, r)
    assert first["gemm_fp32_gflops"]["best"] > 0.1
    again = ceilings.ceilings(1)
    assert again["cached"] is True and again["bandwidth_gbs"] == first["bandwidth_gbs"]
    other = ceilings.ceilings(2)  # another thread count is another machine
    assert other["cached"] is False
    kept = json.loads((small / ceilings.FILE).read_text())
    assert sorted(e["machine"]["threads"] for e in kept) == [1, 2]
    assert ceilings.ceilings(1, refresh=True)["cached"] is False
    assert len(json.loads((small / ceilings.FILE).read_text())) == 2  # replaced, not added
    with pytest.raises(ValueError):
        ceilings.ceilings(1, device="cuda")


CEIL = {"machine": {"cpu_model": "test CPU", "threads": 2},
        "bandwidth_gbs": {"copy": {"best": 10.0}, "triad": {"best": 12.0}},
        "gemm_fp32_gflops": {"best": 100.0}}


def test_the_bound_is_the_slower_of_moving_the_bytes_and_doing_the_flops() -> None:
    # 120 MB at 12 GB/s: 10 ms; 0.1 GFLOP at 100 GFLOP/s: 1 ms -> memory-bound, 10 ms
    timing = {"candidate": {"median_ms": 20.0}, "baseline_eager": {"median_ms": 40.0}}
    roof = roofline.roofline(timing, {"min_bytes": 120e6, "flops": 1e8}, CEIL)
    assert roof["bound_by"] == "memory" and roof["bound_ms"] == pytest.approx(10.0)
    assert roof["parties"]["kernel"]["fraction"] == pytest.approx(0.5)
    assert roof["parties"]["eager"]["fraction"] == pytest.approx(0.25)
    assert roof["parties"]["kernel"]["gbs"] == pytest.approx(6.0)
    assert "compile" not in roof["parties"]
    assert roofline.check(roof, True).outcome == PASS
    compute = roofline.roofline(timing, {"min_bytes": 1.2e6, "flops": 1e10}, CEIL)
    assert compute["bound_by"] == "compute" and compute["bound_ms"] == pytest.approx(100.0)


def test_a_time_faster_than_the_machine_fails_and_missing_numbers_skip() -> None:
    fast = {"candidate": {"median_ms": 10.0 / (roofline.MARGIN * 2)}}
    roof = roofline.roofline(fast, {"min_bytes": 120e6, "flops": 0}, CEIL)
    c = roofline.check(roof, True)
    assert c.outcome == FAIL and "faster than this machine can go" in c.detail, c
    assert roofline.check(roof, False).outcome == SKIPPED  # an interpreter's times: no speed claimed
    assert roofline.check(roofline.roofline(fast, {"min_bytes": 1e6}, None), True).outcome == SKIPPED
    assert roofline.roofline(fast, {}, CEIL) == {}


def test_bytes_that_fit_in_the_caches_move_at_the_caches_speed() -> None:
    # 0.15 MB in 1 us: 6.5x DRAM's floor, but the flush leaves a larger cache warm
    cached = {"candidate": {"median_ms": 0.001}, "flush_bytes": 64 << 20}
    roof = roofline.roofline(cached, {"min_bytes": 0.15e6, "flops": 4e4}, CEIL)
    c = roofline.check(roof, True)
    assert c.outcome == PASS and "fit in the caches" in c.detail, c
    # but not faster than the caches: 100x DRAM's floor with no FLOPs to bound it
    quick = {"candidate": {"median_ms": 0.15e6 / 12e9 * 1e3 / 100}, "flush_bytes": 64 << 20}
    assert roofline.check(roofline.roofline(quick, {"min_bytes": 0.15e6, "flops": 0}, CEIL), True).outcome == FAIL
    # the compute floor still holds: FLOPs do not sit in a cache
    assert roofline.check(roofline.roofline(cached, {"min_bytes": 0.15e6, "flops": 1e9}, CEIL), True).outcome == FAIL
    # past twice the flush, DRAM's floor applies again
    big = {"candidate": {"median_ms": 0.001}, "flush_bytes": 1 << 20}
    assert roofline.check(roofline.roofline(big, {"min_bytes": 120e6, "flops": 0}, CEIL), True).outcome == FAIL

"""Every party allocates through the same allocator, in the same steady state whatever its
process freed before (sandbox/drivers/allocator.py): under glibc a 24 MB output was mapped
afresh on every call of one party (~6,000 page faults a call) and on none of another's,
by the process's history."""

from __future__ import annotations

import os

import pytest

from sandbox import EvalOptions, Judge
from sandbox.drivers import allocator, base
from tests.sandbox.judge import fixture_catalog as fc

ROWS, COLS = 2048, 3000  # a 24.6 MB output: ~6,000 pages


def test_a_runner_is_started_with_jemalloc_unless_told_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    path = allocator.library()
    assert path is not None and os.path.isfile(path), "libjemalloc2 is not installed (scripts/setup.sh installs it)"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-the-sandbox")
    env = base.sandbox_env({"HOME": "/x"})
    assert env["LD_PRELOAD"] == path and env["MALLOC_CONF"] == allocator.CONF
    assert "OPENAI_API_KEY" not in env
    monkeypatch.setenv(allocator.SETTING, "system")
    assert "LD_PRELOAD" not in base.sandbox_env() and allocator.env() == {}


def test_no_party_maps_its_output_afresh_on_every_call(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("KFORGE_JUDGE_BASELINE_CACHE", str(tmp_path))
    problem = fc.problem("relu_affine").read_text() \
        .replace("batch_size = 13", f"batch_size = {ROWS}").replace("dim = 777", f"dim = {COLS}")
    assert f"dim = {COLS}" in problem
    honest = (fc.ROOT / "honest" / "relu_affine__native.py").read_text()
    with Judge() as judge:
        result = judge.evaluate(problem, honest, "relu_affine.py", "relu_affine__native.py",
                                EvalOptions(device="cpu", time_reps=6, compile_baseline=False))
    assert result.verdict == "pass", result.reasons
    timing = result.timing
    assert timing["allocator"] == "jemalloc" and "jemalloc's allocator" in timing["label"]
    pages = ROWS * COLS * 4 // 4096
    for party in ("candidate", "baseline_eager"):
        # the first timed call may still fault; the median call reuses what the last one freed
        assert timing[party].get("faults_per_call", 0) < pages // 20, (party, timing[party])

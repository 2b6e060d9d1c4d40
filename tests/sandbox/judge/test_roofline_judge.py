"""A judgement against the machine's kept ceilings (issue 56): the kernel's, eager's and
torch.compile's fraction of the roofline in the result, and ``within_physical_limits``
failing a time the machine cannot produce."""

from __future__ import annotations

import json
import os

import pytest

from sandbox import EvalOptions, Judge, ceilings
from tests.sandbox.judge import fixture_catalog as fc

OPTIONS = EvalOptions(device="cpu", timing_sets=2, time_reps=3, compile_baseline=False)


def keep(folder, bandwidth_gbs: float, gflops: float) -> None:
    """Ceilings kept for every thread count the judge may grant here."""
    rate = lambda v: {"best": v, "median": v, "spread": 0.0}  # noqa: E731
    entries = [{"machine": ceilings.machine_key(n), "bandwidth_gbs": {k: rate(bandwidth_gbs) for k in
                                                                      ("read", "write", "copy", "triad")},
                "gemm_fp32_gflops": rate(gflops), "measured_at": "test", "seconds": 0}
               for n in range(1, (os.cpu_count() or 1) + 1)]
    (folder / ceilings.FILE).write_text(json.dumps(entries))


@pytest.fixture
def judged(monkeypatch: pytest.MonkeyPatch, tmp_path):
    monkeypatch.setenv("KFORGE_JUDGE_BASELINE_CACHE", str(tmp_path))
    problem = fc.problem("relu_affine").read_text()
    honest = (fc.ROOT / "honest" / "relu_affine__native.py").read_text()

    def run(bandwidth_gbs: float, gflops: float):
        keep(tmp_path, bandwidth_gbs, gflops)
        with Judge() as judge:
            return judge.evaluate(problem, honest, "relu_affine.py", "relu_affine__native.py", OPTIONS)
    return run


def test_each_timed_party_gets_its_fraction_of_the_roofline(judged) -> None:
    result = judged(1000.0, 1e6)  # a machine far faster than this one: every fraction small
    assert result.verdict == "pass", result.reasons
    roof = result.roofline
    x_bytes = 13 * 777 * 4
    assert roof["min_bytes"] == 2 * x_bytes  # the input read once, the output written once
    assert roof["bound_by"] == "memory" and set(roof["parties"]) == {"kernel", "eager"}
    for party in roof["parties"].values():
        assert 0 < party["fraction"] < 1 and party["gbs"] > 0
    checks = {c.name: c for c in result.checks}
    assert checks["within_physical_limits"].outcome == "pass" and "of the roofline" in checks["within_physical_limits"].detail
    assert result.to_json()["roofline"] == roof


def test_a_time_the_machine_cannot_produce_fails_within_physical_limits(judged) -> None:
    result = judged(1e-7, 1e-6)  # kept ceilings that no kernel's time can respect, however slow this host
    checks = {c.name: c for c in result.checks}
    assert result.verdict == "fail"
    assert checks["within_physical_limits"].outcome == "fail", checks["within_physical_limits"]
    assert "faster than this machine can go" in checks["within_physical_limits"].detail

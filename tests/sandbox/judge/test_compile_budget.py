"""A reference whose torch.compile baseline does not build within its allowance
(KernelBench level3/34's loop unrolled into 256 steps: 330 s were not enough) is judged
against eager alone, and the result says why, instead of the problem ending in an error.
Here the compiled reference is made slow on purpose: under torch.compile it sleeps past the
job's time (``torch.compiler.is_compiling()`` is true only while dynamo traces it; the sleep
is a graph break run on every compiled call), while eager never does."""

from __future__ import annotations

from sandbox.judge import EvalOptions, Judge
from sandbox.judging import compile_budget
from tests.sandbox.judge import fixture_catalog as fc

REFERENCE = fc.problem("relu_affine").read_text().replace(
    "        return torch.relu(x) * 2.0 + 1.0",
    "        if torch.compiler.is_compiling():\n            time.sleep(900)\n        return torch.relu(x) * 2.0 + 1.0",
).replace("import torch\n", "import time\n\nimport torch\n", 1)
HONEST = (fc.HONEST / "relu_affine__native.py").read_text()


def test_a_compile_baseline_that_does_not_build_in_time_leaves_eager_and_says_why(monkeypatch) -> None:
    assert "time.sleep(900)" in REFERENCE and "import time" in REFERENCE
    monkeypatch.setattr(compile_budget, "ALLOWANCE_S", 0.0)
    options = EvalOptions(device="cpu", trials=2, time_reps=5, timing_sets=1, compile_baseline=True, timeout=60)
    with Judge() as judge:
        result = judge.evaluate(REFERENCE, HONEST, options=options)
    timing = result.to_json()["timing"]
    assert result.verdict == "pass", result.reasons
    assert "baseline_compile" not in timing and timing["baseline_eager"]["median_ms"] > 0, timing
    assert "speedup_vs_eager" in timing and "speedup_vs_compile" not in timing, timing
    assert "torch.compile of the reference did not build in time" in timing["compile_missing"]
    assert "baseline_compile" in timing["compile_missing"], timing["compile_missing"]


def test_a_reference_that_ends_elsewhere_is_not_retried() -> None:
    from sandbox.drivers.base import JobOutcome

    class Run:
        compile_baseline, ref_job, compile_missing, compiled_key = True, {"compile_baseline": True}, "", "k"

    ended = JobOutcome(frames=[{"kind": "trial", "index": 3}])
    assert compile_budget.without_compile(Run(), ended, lambda job: 1 / 0) is ended
    assert Run.compile_missing == ""

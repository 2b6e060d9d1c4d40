"""Held-out sources, the baseline cache, speedups from a cached baseline, compare."""

from __future__ import annotations

import pytest

from app.batch.compare import change, compare
from app.batch.heldout import SCALES, SHRINK_SCALES, held_out, scaled_source
from app.batch.reporting.report import write_reports
from app.batch.run import BatchError
from app.batch.task import final_evaluation, speedups
from sandbox import EvalOptions, ProblemError, load_problem
from tests.app.batch.records import gpu_run, record

REFERENCE = '''"""x + y"""
import torch
import torch.nn as nn

# a comment that ast drops
class Model(nn.Module):
    def forward(self, x):
        return x * 2

batch_size = 16
dim = 1024
groups: int = 8
eps = 1e-5
kernel = 3
hidden = dim * 2

def get_inputs():
    return [torch.randn(batch_size, hidden)]

def get_init_inputs():
    return []
'''


def test_scaled_source_grows_literal_size_constants_only():
    source, sizes = scaled_source(REFERENCE, SCALES[0][1])
    assert sizes == {"batch_size": 21, "dim": 1281, "groups": 11}
    problem = load_problem("ref.py", source)
    assert problem.constants["hidden"] == 2562 and problem.constants["eps"] == 1e-5 and problem.constants["kernel"] == 3
    assert problem.input_shapes == [[21, 2562]]
    assert all(v % 2 == 1 for v in sizes.values())
    _, doubled = scaled_source(REFERENCE, SCALES[1][1])
    assert doubled == {"batch_size": 32, "dim": 2048, "groups": 16}
    assert scaled_source(REFERENCE.replace("batch_size = 16", "batch_size = 4").replace("dim = 1024", "dim = 5")
                         .replace("groups: int = 8", "groups: int = 2"), SCALES[0][1]) is None


def test_held_out_falls_back_to_x2_when_the_reference_cannot_run_at_odd_sizes():
    calls = []

    def judge(ref: str, name: str, code: str) -> dict:
        calls.append(load_problem(name, ref).constants["dim"])
        if len(calls) == 1:
            raise ProblemError("the reference failed at its default sizes: not divisible")
        return {"verdict": "fail", "reasons": ["correctness: 7 of 99 differ"], "perturbed_sizes": []}

    out = held_out(judge, REFERENCE, "ref", "class ModelNew: ...")
    assert calls == [1281, 2048]
    assert out["status"] == "fail" and out["scale"] == "x2" and "not divisible" in out["tried"][0]["why"]


def test_held_out_is_unavailable_without_size_constants_or_a_runnable_reference():
    def broken(ref: str, name: str, code: str) -> dict:
        raise ProblemError("reference unusable")

    assert held_out(broken, REFERENCE, "ref", "")["status"] == "unavailable"
    small = REFERENCE.replace("= 16", "= 4").replace("= 1024", "= 5").replace("= 8", "= 2")
    assert held_out(broken, small, "ref", "")["status"] == "unavailable"


def test_speedups_come_from_the_judge_run_alone():
    timing = {"device": "cuda", "candidate": {"median_ms": 0.5}, "baseline_eager": {"median_ms": 1.1},
              "speedup_vs_eager": {"value": 2.2}, "speedup_vs_compile": {"value": 1.6}}
    out = speedups({"verdict": "pass"}, timing)
    assert out == {"speedup_eager": 2.2, "speedup_compile": 1.6, "baseline_source": "measured"}
    assert speedups({"verdict": "fail"}, timing) == {"baseline_source": None}
    # On the CPU the judge reports a speedup only when it timed native kernels (backend cpu); Triton's
    # interpreter gets none, and then there is none to report.
    interpreted = {k: v for k, v in timing.items() if not k.startswith("speedup")} | {"device": "cpu"}
    assert speedups({"verdict": "pass"}, interpreted) == {"baseline_source": None}


def test_compare_reports_per_problem_changes(tmp_path):
    a, b = gpu_run(), gpu_run()
    b[0]["speedup_eager"] = 3.0              # faster
    b[1]["correct"] = False                  # broken
    b[3] = record("level2/2_d", eager=1.0, level=2)  # fixed
    write_reports(tmp_path / "a", a, {"suite": "s"})
    write_reports(tmp_path / "b", b + [record("level3/1_new", level=3)], {"suite": "s"})
    diff = compare(tmp_path / "a", tmp_path / "b")
    by = {r["problem"]: r for r in diff["rows"]}
    assert by["level1/1_a"]["change"] == "faster" and by["level1/1_a"]["speedup_eager_ratio"] == 1.5
    assert by["level1/2_b"]["change"] == "broken" and by["level2/2_d"]["change"] == "fixed"
    assert by["level2/1_c"]["change"] == "same" and by["level3/1_new"]["change"] == "new"
    assert diff["metrics"]["correctness_rate"] == {"a": 0.75, "b": 0.8}
    assert change({"correct": True, "held_out": "pass"}, {"correct": True, "held_out": "fail"}) == "held-out lost"
    with pytest.raises(BatchError):
        compare(tmp_path / "a", tmp_path / "missing")


def test_final_evaluation_times_compile_in_the_same_run_every_time():
    """No GPU here: a stand-in judge returns what the real one returns on CUDA. Each final
    evaluation asks the judge for torch.compile where timing is real, so the compile ratio
    is always this run's (issue 26: no cached timing in a ratio)."""
    asked = []

    def judge_fn(ref: str, name: str, code: str, opts: EvalOptions) -> dict:
        asked.append(opts.compile_baseline)
        timing = {"device": "cuda", "candidate": {"median_ms": 1.0}, "baseline_eager": {"median_ms": 2.0},
                  "speedup_vs_eager": {"value": 2.0}}
        if opts.compile_baseline:
            timing.update(baseline_compile={"median_ms": 1.5}, speedup_vs_compile={"value": 1.5})
        return {"verdict": "pass", "timing": timing}

    seen = {"device": "cuda", "hardware": "NVIDIA H100 80GB HBM3 (sm_90)"}
    _, first = final_evaluation(judge_fn, REFERENCE, "ref", "code", EvalOptions(), seen)
    _, second = final_evaluation(judge_fn, REFERENCE, "ref", "code", EvalOptions(), seen)
    assert asked == [True, True]
    assert first == second == {"speedup_eager": 2.0, "speedup_compile": 1.5, "baseline_source": "measured"}
    final_evaluation(judge_fn, REFERENCE, "ref", "code", EvalOptions(), {"device": "cpu"}, "cpu")
    assert asked[-1] is True, "native kernels on the CPU: compile timed in the run"
    final_evaluation(judge_fn, REFERENCE, "ref", "code", EvalOptions(), {"device": "cpu"}, "triton")
    assert asked[-1] is False, "Triton's interpreter: nothing timed for real"


def test_held_out_of_a_problem_fitted_to_memory_shrinks_instead_of_growing():
    seen = []

    def judge(ref: str, name: str, code: str) -> dict:
        seen.append(load_problem(name, ref).constants["dim"])
        return {"verdict": "pass", "reasons": [], "perturbed_sizes": []}

    out = held_out(judge, REFERENCE, "ref", "class ModelNew: ...", SHRINK_SCALES)
    assert seen == [819] and out["status"] == "pass" and out["scale"] == "x0.8 odd"
    assert all(v < d for v, d in zip(out["sizes"].values(), (16, 1024, 8)))


def test_the_held_out_judge_checks_correctness_untimed():
    """At held-out sizes the judge runs the correctness trials and their checks, no timed pass:
    a right C kernel passes with no timing measured, a wrong one still fails."""
    from pathlib import Path

    from app.batch.heldout import held_out_options
    from sandbox import Judge

    root = Path(__file__).resolve().parents[3] / "problems" / "level1"
    reference = (root / "29_group_norm.py").read_text()
    options = held_out_options(EvalOptions(device="cpu"))
    with Judge(warm=True) as judge:
        source, _ = scaled_source(reference, SHRINK_SCALES[0][1])
        right = judge.evaluate(source, (root / "solutions" / "group_norm" / "correct_c.py").read_text(),
                               "gn_heldout.py", "correct_c.py", options)
        wrong = judge.evaluate(source, (root / "solutions" / "group_norm" / "wrong_unbiased_var.py").read_text(),
                               "gn_heldout.py", "wrong.py", options)
    assert right.verdict == "pass", right.reasons
    assert not any(isinstance(v, dict) and v.get("times_ms") for v in right.timing.values()), right.timing
    assert "speedup_vs_eager" not in right.timing
    assert wrong.verdict == "fail" and any(r.startswith("correctness") for r in wrong.reasons), wrong.reasons

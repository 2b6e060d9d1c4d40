"""A result is a comparison: the fastest of {best kernel, eager, torch.compile} from
recorded judge timings (the shape sandbox/result.py's timing_summary writes)."""

from __future__ import annotations

from typing import Any

from agents.search import Attempt, Round, Trajectory, compare, compare_attempt, compare_record

LABEL = "cpu: Intel(R) Xeon(R) Processor, 2 thread(s); native kernels"


def timing(kernel_ms: float, eager_ms: float, compile_ms: float | None) -> dict[str, Any]:
    """A native kernel's judge timing on the CPU: three medians of one run and the speedups."""
    out: dict[str, Any] = {"device": "cpu", "label": LABEL,
                           "candidate": {"median_ms": kernel_ms, "q1_ms": kernel_ms, "q3_ms": kernel_ms},
                           "baseline_eager": {"median_ms": eager_ms, "q1_ms": eager_ms, "q3_ms": eager_ms},
                           "speedup_vs_eager": {"value": eager_ms / kernel_ms}}
    if compile_ms is not None:
        out["baseline_compile"] = {"median_ms": compile_ms, "q1_ms": compile_ms, "q3_ms": compile_ms}
        out["speedup_vs_compile"] = {"value": compile_ms / kernel_ms}
    return out


def test_kernel_wins():
    c = compare(timing(1.0, 1.8, 1.2), attempt_id="r1-c0")
    assert c.fastest == "kernel" and c.kernel_won and c.kernel_beats_eager
    assert c.recommendation == "Use the kernel: 1.80x faster than eager, 1.20x faster than torch.compile."
    assert (c.kernel_ms, c.eager_ms, c.compile_ms, c.attempt_id) == (1.0, 1.8, 1.2, "r1-c0")
    assert c.label == LABEL and c.to_json()["kernel_beats_eager"] is True


def test_eager_wins():
    c = compare(timing(1.0, 0.87, 2.0))
    assert c.fastest == "eager" and not c.kernel_won and not c.kernel_beats_eager
    assert c.recommendation == "Keep the reference: no kernel beat eager PyTorch (best 0.87x)."
    assert "eager PyTorch" in c.summary and "0.87x eager" in c.summary


def test_compile_wins_over_a_kernel_slower_than_eager():
    c = compare(timing(1.0, 0.87, 0.87 / 2.1))
    assert c.fastest == "torch.compile" and not c.kernel_beats_eager
    assert c.recommendation == ("Keep the reference: no kernel beat eager PyTorch (best 0.87x); "
                                "torch.compile is 2.10x faster than eager here, use it.")


def test_compile_wins_over_a_kernel_faster_than_eager():
    c = compare(timing(1.0, 1.2, 0.7))
    assert c.fastest == "torch.compile" and c.kernel_beats_eager and not c.kernel_won
    assert c.recommendation.startswith("Use torch.compile: it is 1.71x faster than eager here")
    assert "slower than torch.compile (0.70x torch.compile)" in c.recommendation


def test_a_tie_with_eager_keeps_the_reference_and_a_missing_compile_is_left_out():
    c = compare(timing(1.0, 1.0, None))
    assert c.fastest == "eager" and c.compile_ms is None and c.speedup_vs_compile is None
    assert "torch.compile not timed" in c.summary
    assert compare(timing(1.0, 1.5, None)).fastest == "kernel"


def test_nothing_measured_invents_nothing():
    # Triton's interpreter on the CPU: the judge reports medians but no speedup.
    interp = {"device": "cpu", "label": "", "candidate": {"median_ms": 40.0}, "baseline_eager": {"median_ms": 0.2},
              "note": "no GPU: speedup not reported; these CPU timings (eager torch / Triton's interpreter) say "
                      "nothing about speed"}
    c = compare(interp)
    assert c.fastest == "unknown" and c.speedup_vs_eager is None and c.speedup_vs_compile is None
    assert c.summary == "Speed not measured (Triton interpreter): correctness only."
    assert compare({}).fastest == "unknown"


def test_no_verified_kernel():
    assert compare(None, verified=False).summary == "No verified kernel."
    assert compare_record(None).fastest == "unknown"
    assert compare_record({"verdict": "fail", "timing": timing(1.0, 2.0, 2.0)}).summary == "No verified kernel."
    assert compare_attempt(None).summary == "No verified kernel."


def test_a_trajectory_summary_carries_the_comparison_of_its_best():
    traj = Trajectory(problem="p.py", reference="", config={}, label="offline engine (no LLM)")
    traj.rounds.append(Round(index=0, attempts=[
        Attempt(id="r0-c0", round=0, strategy="s", code="", source="offline", verdict="pass", speedup=0.87,
                timing=timing(1.0, 0.87, 2.0)),
        Attempt(id="r0-c1", round=0, strategy="s", code="", source="offline", verdict="pass", speedup=0.5,
                timing=timing(2.0, 1.0, 4.0))]))
    summary = traj.summary()
    assert summary["best"]["id"] == "r0-c0"
    assert summary["comparison"]["fastest"] == "eager" and summary["comparison"]["attempt_id"] == "r0-c0"
    assert compare_record({**summary["best"]}).to_json() == summary["comparison"]

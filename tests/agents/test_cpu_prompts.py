"""Prompts and profile feedback for backend cpu: the backend's own templates are chosen, the
planner sees per-op times, the CPU and counters, repairs carry real speedups."""

from __future__ import annotations

from agents.context import Context
from agents.cpu_profile import describe_counters, describe_ops, describe_timing
from agents.prompting import render, variant
from agents.roles.verifier import Verification
from agents.search.loop import Planner  # via the search: roles.planner alone would import in a cycle

ANALYSIS = {
    "device": "cpu", "hardware": "CPU only", "cpu": {"model": "AMD EPYC", "isa": ["avx2", "fma"], "threads": 2},
    "inputs": [{"shape": [8, 16], "dtype": "float32"}], "outputs": [{"shape": [8, 16], "dtype": "float32"}],
    "parameters": {}, "profile": [{"op": "aten::gelu", "self_us": 812.5, "calls": 1, "share": 0.75},
                                  {"op": "aten::mul", "self_us": 270.8, "calls": 2, "share": 0.25}],
    "counters": {"cycles": 4.0e9, "instructions": 6.0e9, "cache-references": 2.0e7, "cache-misses": 5.0e6},
}


def test_backend_templates_are_chosen() -> None:
    assert variant("system_coder", "cpu") == "system_coder_cpu" and variant("system_coder", "triton") == "system_coder"
    assert variant("coder", "cpu") == "coder"  # no cpu-specific user prompt: the shared one
    text = render(variant("system_coder", "cpu"), backend="cpu")
    for needle in ("from kforge_native import load_c", "module-level string literal", "omp_set_num_threads",
                   "static or file-scope mutable state", "immintrin.h"):
        assert needle in text


def test_cpu_profile_lines() -> None:
    assert describe_ops(ANALYSIS["profile"]).splitlines()[0] == "- aten::gelu: 75.0% (1 call(s), 812.5 us per forward)"
    counters = describe_counters(ANALYSIS["counters"])
    assert "IPC 1.50" in counters and "25.0% of 2e+07 references" in counters
    assert describe_counters(None) == "" and "not available" in describe_counters({"error": "perf: not supported"})
    timing = {"candidate": {"median_ms": 0.5}, "speedup_vs_eager": {"value": 3.2},
              "speedup_vs_compile": {"value": 1.1}}
    assert describe_timing(timing) == "median 0.5000 ms, 3.20x vs eager, 1.10x vs torch.compile"


def test_planner_prompt_for_cpu_has_times_cpu_and_counters() -> None:
    ctx = Context("class Model: ...", "ref.py", ANALYSIS, backend="cpu")
    prompt = Planner(provider=None).prompt(ctx, [], 3, False)  # type: ignore[arg-type]
    assert "812.5 us per forward" in prompt and "IPC 1.50" in prompt
    assert "AMD EPYC, cpu-avx2 (avx2, fma), 2 thread(s) granted" in prompt and "Backend: cpu" in prompt
    # the GPU prompt is unchanged
    gpu = Planner(provider=None).prompt(Context("class Model: ...", "ref.py", ANALYSIS), [], 3, False)  # type: ignore[arg-type]
    assert "us per forward" not in gpu and "- aten::gelu: 75.0% (1 call(s))" in gpu


def test_the_planner_sees_each_attempts_headroom_against_the_machine() -> None:
    from agents.trajectory import Attempt

    roof = {"min_bytes": 8e6, "flops": 2e6, "bound_by": "memory", "bound_ms": 0.4,
            "parties": {"kernel": {"fraction": 0.31, "gbs": 9.3, "gflops": 2.3},
                        "eager": {"fraction": 0.12, "gbs": 3.6, "gflops": 0.9}}}
    tried = [Attempt("a1", 1, "fused loop", "", "offline", verdict="pass", speedup=2.5, roofline=roof),
             Attempt("a2", 1, "tiles", "", "offline", verdict="fail", reasons=["correctness: off"])]
    prompt = Planner(provider=None).prompt(Context("class Model: ...", "ref.py", ANALYSIS, backend="cpu"),  # type: ignore[arg-type]
                                           tried, 3, False)
    assert "- a1 [offline] fused loop: pass, speedup 2.50x, 31% of the memory-bound floor" in prompt
    assert "memory-bound floor 0.4 ms on this machine; kernel 31% of it" in prompt and "eager 12% of it" in prompt
    assert "- a2 [offline] tiles: fail — correctness: off" in prompt


def test_repair_feedback_carries_cpu_speedups() -> None:
    v = Verification("fail", ["correctness: max abs error 0.3"], {"correctness": "fail"},
                     {"correctness": "max abs error 0.3"}, None,
                     {"candidate": {"median_ms": 1.0}, "speedup_vs_eager": {"value": 0.8},
                      "speedup_vs_compile": {"value": 0.5}, "label": "cpu: AMD EPYC, 2 thread(s)"})
    assert "- timing: median 1.0000 ms, 0.80x vs eager, 0.50x vs torch.compile (cpu: AMD EPYC" in v.feedback()


def test_search_config_accepts_cpu_and_refuses_unknown_backends() -> None:
    import pytest

    from agents.search import SearchConfig

    assert SearchConfig(backend="cpu").to_dict()["backend"] == "cpu"
    with pytest.raises(ValueError, match="unknown backend"):
        SearchConfig(backend="opencl")

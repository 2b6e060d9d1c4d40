"""Part (d): timing quality. The judge evaluates one bundled kernel several times; the
spread of its candidate medians, (max - min) / median, says how repeatable its timing
is, the judge's cost per phase (median over the runs) where a judge run spends its
time, and the ratio of its median to an independent timer's (torch.utils.benchmark.Timer
on the CPU, the host's clock over synchronised calls on CUDA, in this process) says whether
it measures the right thing.

Verdict: pass when both targets are met; otherwise warn when the host is loaded
(1-minute load average >= LOADED per core: other work, not the judge, moves the
numbers) and fail on a quiet host. The numbers are always reported.
"""

from __future__ import annotations

import os
import statistics
from types import ModuleType
from typing import Any

from .common import OptionsFor, Part, load_per_core
from .kernels import C_PROTO, C_SOURCE, CPU_CANDIDATE, REFERENCE, TRITON_CANDIDATE

SPREAD_TARGET = 0.05
AGREEMENT_TARGET = 0.10
LOADED = 0.5


def _independent_cpu_ms(rows: int, cols: int, threads: int) -> float:
    import torch
    import torch.utils.benchmark as tb

    from sandbox.runner.native import library as native

    torch.set_num_threads(threads)
    lib = native.load_c(C_SOURCE, [C_PROTO], name="gelu_gate")
    x, g = torch.randn(rows, cols), torch.randn(rows, cols)
    y = torch.empty_like(x)
    timer = tb.Timer(stmt="lib.gelu_gate(x, g, y, n)", globals={"lib": lib, "x": x, "g": g, "y": y, "n": x.numel()},
                     num_threads=threads)
    return float(timer.blocked_autorange(min_run_time=1.0).median * 1e3)


# The independent CUDA timer's repetitions and warm-up calls.
CUDA_TIMER_REPS = 50
CUDA_TIMER_WARMUP = 5


def _independent_cuda_ms(rows: int, cols: int) -> float:
    """The bundled kernel's call as a program that waits for it sees it, by the host's clock
    in this process: the L2 flushed and the device idle before each call, the clock stopped
    once every stream is done. That is what the judge's events span (runner/measure/timing.cuda_rep:
    launch included), so the two should agree. ``triton.testing.do_bench`` measures another
    thing: back-to-back calls whose launches overlap the previous flush, the GPU's time alone
    (for a kernel of a few microseconds, a fraction of what its caller waits)."""
    import time

    import torch

    module = ModuleType("kforge_selftest_timing")
    exec(compile(TRITON_CANDIDATE, "selftest_timing.py", "exec"), module.__dict__)  # our own bundled kernel
    model = module.ModelNew()
    x, g = torch.randn(rows, cols, device="cuda"), torch.randn(rows, cols, device="cuda")
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    for _ in range(CUDA_TIMER_WARMUP):
        model(x, g)
    times = []
    for _ in range(CUDA_TIMER_REPS):
        flush.zero_()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        model(x, g)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def run(judge: Any, options_for: OptionsFor, device: str, quick: bool) -> Part:
    part = Part("timing")
    runs, rows, cols = (3, 256, 2048) if quick else (8, 512, 4096)
    if device == "cuda":
        rows, cols = rows * 8, cols
    reference = REFERENCE.format(rows=rows, cols=cols)
    candidate, backend = (CPU_CANDIDATE, "cpu") if device == "cpu" else (TRITON_CANDIDATE, "triton")
    options = options_for(backend, trials=1, compile_baseline=False)
    load_before = load_per_core()
    medians: list[float] = []
    costs: list[dict[str, Any]] = []
    label, threads = "", 1
    for i in range(runs):
        result = judge.evaluate(reference, candidate, "selftest_timing_ref.py", "selftest_timing.py", options)
        if result.verdict != "pass" or not (result.timing or {}).get("candidate"):
            part.summary = f"run {i}: the judge did not time the bundled kernel: {result.reasons[:2]}"
            return part
        medians.append(float(result.timing["candidate"]["median_ms"]))
        costs.append(result.cost or {})
        label, threads = result.timing.get("label", ""), int(result.timing.get("threads") or os.cpu_count() or 1)
    mid = statistics.median(medians)
    spread = (max(medians) - min(medians)) / mid
    independent = _independent_cpu_ms(rows, cols, threads) if device == "cpu" else _independent_cuda_ms(rows, cols)
    ratio = mid / independent
    load = max(load_before, load_per_core())
    part.numbers = {"judge_medians_ms": [round(m, 4) for m in medians], "spread": round(spread, 4),
                    "spread_target": SPREAD_TARGET, "independent_timer": "torch.utils.benchmark.Timer"
                    if device == "cpu" else "host clock over synchronised calls", "independent_median_ms": round(independent, 4),
                    "judge_over_independent": round(ratio, 4), "agreement_target": AGREEMENT_TARGET,
                    "load_per_core": round(load, 2), "shape": [rows, cols], "label": label,
                    "judge_cost_s": cost_by_phase(costs)}
    met = spread <= SPREAD_TARGET and abs(ratio - 1) <= AGREEMENT_TARGET
    part.verdict = "pass" if met else ("warn" if load >= LOADED else "fail")
    part.summary = (f"spread of {runs} judge medians {spread:.1%} (target <= {SPREAD_TARGET:.0%}); judge / "
                    f"{part.numbers['independent_timer']} = {ratio:.3f} (target within {AGREEMENT_TARGET:.0%}); "
                    f"load {load:.2f} per core" + ("" if met else " (loaded host: warn)" if load >= LOADED else ""))
    return part


def cost_by_phase(costs: list[dict[str, Any]]) -> dict[str, float]:
    """The judge's seconds per phase (sandbox/cost.py), the median over the runs."""
    phases = sorted({k for c in costs for k, v in c.items() if isinstance(v, (int, float))})
    return {k: round(statistics.median([float(c[k]) for c in costs if isinstance(c.get(k), (int, float))]), 3)
            for k in phases}

"""Profile feedback for the cpu backend, written for the model like the GPU profile is:
where the reference's time goes per op (torch.profiler, in microseconds), hardware
counters when the judge could read them with `perf stat` (cycles, IPC, cache misses),
and a candidate's measured speedups over eager and torch.compile."""

from __future__ import annotations

from typing import Any

from knowledge_base.problem_identity import cpu_arch, cpu_flags


def describe_ops(rows: list[dict[str, Any]], limit: int = 10) -> str:
    """``- aten::mm: 82.0% (1 call(s), 1234.5 us per forward)`` per op, most expensive first."""
    lines = []
    for r in rows[:limit]:
        us = r.get("self_us")
        per = f", {float(us):.1f} us per forward" if isinstance(us, (int, float)) else ""
        lines.append(f"- {r['op']}: {100 * float(r.get('share', 0.0)):.1f}% ({r.get('calls', '?')} call(s){per})")
    return "\n".join(lines) or "- (empty)"


def describe_counters(counters: dict[str, Any] | None) -> str:
    """perf stat counters as a line the model can reason with; empty when none were read."""
    if not counters:
        return ""
    if counters.get("error"):
        return f"Hardware counters: not available ({counters['error']})."

    def num(key: str) -> float | None:
        v = counters.get(key)
        return float(v) if isinstance(v, (int, float)) and v >= 0 else None

    cycles, instructions = num("cycles"), num("instructions")
    refs, misses = num("cache-references"), num("cache-misses")
    parts = []
    if cycles is not None:
        parts.append(f"{cycles:.3g} cycles")
    if instructions is not None:
        parts.append(f"{instructions:.3g} instructions")
    if cycles and instructions is not None:
        parts.append(f"IPC {instructions / cycles:.2f}")
    if misses is not None:
        rate = f" ({100 * misses / refs:.1f}% of {refs:.3g} references)" if refs else ""
        parts.append(f"{misses:.3g} cache misses{rate}")
    for key in ("L1-dcache-load-misses", "LLC-load-misses", "branch-misses"):
        v = num(key)
        if v is not None:
            parts.append(f"{v:.3g} {key}")
    return ("Hardware counters (perf stat): " + ", ".join(parts) + ".") if parts else ""


def describe_cpu(analysis: dict[str, Any]) -> str:
    """The CPU the kernels run on: model, ISA level, threads granted."""
    cpu = analysis.get("cpu") if isinstance(analysis.get("cpu"), dict) else {}
    model = cpu.get("model") or analysis.get("cpu_model") or "CPU"
    threads = cpu.get("threads") or analysis.get("threads")
    flags = cpu_flags(analysis)
    simd = [f for f in ("avx512f", "avx2", "fma", "f16c", "avx512bw", "avx512_bf16", "amx_tile") if f in flags]
    return (f"{model}, {cpu_arch(analysis)} ({', '.join(simd) or 'no AVX'})"
            + (f", {threads} thread(s) granted" if threads else "")
            + "; kernels built with gcc -O3 -march=native -fopenmp")


def describe_timing(timing: dict[str, Any]) -> str:
    """A candidate's CPU timing and speedups, one line, for the coder's repair prompt."""
    parts = []
    cand = timing.get("candidate") or {}
    if isinstance(cand, dict) and cand.get("median_ms") is not None:
        parts.append(f"median {float(cand['median_ms']):.4f} ms")
    for key, what in (("speedup_vs_eager", "eager"), ("speedup_vs_compile", "torch.compile")):
        s = timing.get(key)
        if isinstance(s, dict) and s.get("value") is not None:
            parts.append(f"{float(s['value']):.2f}x vs {what}")
    counters = describe_counters(timing.get("counters"))
    text = ", ".join(parts)
    return (text + (f". {counters}" if counters else "")).strip()

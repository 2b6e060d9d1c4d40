"""The judge's result, as users and the JSON contract see it."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from .drivers.base import JobOutcome
from .verdict import check_list, tolerances
from .verdict.checks import FAIL, PASS, SKIPPED, Check
from .verdict.timer_checks import median_iqr

# Checks whose failure means the numbers are wrong (``correct`` is False);
# the others catch cheating and misbehaviour around correct-looking numbers.
NUMERIC = check_list.NUMERIC


@dataclass
class EvalResult:
    device: str
    sandbox: str
    seeds: list[int] = field(default_factory=list)
    verdict: str = "error"
    reasons: list[str] = field(default_factory=list)
    correct: bool = False
    checks: list[Check] = field(default_factory=list)
    timing: dict[str, Any] = field(default_factory=dict)
    perturbed: list[dict[str, int]] = field(default_factory=list)
    work: dict[str, Any] = field(default_factory=dict)  # kernel / torch shares of the reference's work
    roofline: dict[str, Any] = field(default_factory=dict)  # against this machine's ceilings (verdict/roofline.py)
    elapsed_s: float = 0.0
    cost: dict[str, Any] = field(default_factory=dict)  # seconds by phase (sandbox/cost.py)

    def finish(self, found: list[Check], order: tuple[str, ...], started: float) -> EvalResult:
        by_name = {c.name: c for c in found}
        not_run = "not run: the candidate did not load" if by_name.get("compile", Check("", PASS)).outcome == FAIL \
            else "not run"
        self.checks = [by_name.get(n) or Check(n, SKIPPED, not_run) for n in order]
        self.checks += [c for c in found if c.name not in order]
        failed = [c for c in self.checks if c.outcome == FAIL]
        self.verdict = "fail" if failed else "pass"
        self.reasons = [f"{c.name}: {c.detail}" for c in failed]
        self.correct = all(by_name.get(n, Check(n, FAIL)).outcome in (PASS, SKIPPED) for n in NUMERIC) \
            and by_name.get("correctness", Check("", FAIL)).outcome == PASS
        if self.verdict != "pass":
            self.timing.pop("speedup_vs_eager", None)
            self.timing.pop("speedup_vs_compile", None)
        self.elapsed_s = time.monotonic() - started
        return self

    @property
    def speedup(self) -> float | None:
        s = self.timing.get("speedup_vs_eager")
        return s["value"] if s else None

    @property
    def speedup_compile(self) -> float | None:
        s = self.timing.get("speedup_vs_compile")
        return s["value"] if s else None

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "reasons": self.reasons,
            "correct": self.correct,
            "speedup": self.speedup,
            "speedup_compile": self.speedup_compile,
            "checks": {c.name: c.outcome for c in self.checks},
            "check_details": {c.name: c.detail for c in self.checks},
            "timing": self.timing,
            "device": self.device,
            "sandbox": self.sandbox,
            "perturbed_sizes": self.perturbed,
            "work": self.work,
            "roofline": self.roofline,
            "tolerances": tolerances.describe(),
            "elapsed_s": round(self.elapsed_s, 3),
            "cost": self.cost,
        }


def cpu_label(frame: dict[str, Any]) -> str:
    clock = "the runner's wall clock per call, outside the timed process," if frame.get("clocked") \
        else "wall clock per call"
    return (f"cpu: {frame.get('cpu_model', 'unknown CPU')}, {frame.get('threads', '?')} thread(s); native kernels, "
            f"{clock} with the last-level cache flushed ({int(frame.get('flush_bytes', 0)) >> 20} MB "
            f"read) before each; {frame.get('allocator', 'glibc')}'s allocator; baselines timed the same way")


def timing_summary(ref: JobOutcome, cand: JobOutcome, device: str, native_cpu: bool = False,
                   compile_missing: str = "") -> dict[str, Any]:
    """Medians with IQR, and speedups with their spread: on CUDA, and on the
    CPU when the candidate's kernels are native (no Triton launch: the
    interpreter's times say nothing about speed). ``compile_missing``: why
    torch.compile is no baseline (sandbox/judging/compile_budget.py)."""
    runs = {f["name"]: f for f in ref.of_kind("timing") + cand.of_kind("timing") if f.get("times_ms")}
    if not runs:
        return {}
    first = next(iter(runs.values()))
    out: dict[str, Any] = {"device": device, "label": first.get("label", "")}
    for name, frame in runs.items():
        out[name] = median_iqr(frame["times_ms"])
        if frame.get("cached"):
            out[name]["cached"] = True  # timed earlier on this machine (sandbox/baseline_cache.py)
            chk = frame.get("checked") or {}
            out[name]["source"] = ("cached, checked: this run's eager timing ({:.4g} ms) agrees with the eager "
                                   "timing cached with it ({:.4g} ms)").format(
                chk.get("fresh_eager_median_ms", float("nan")), chk.get("cached_eager_median_ms", float("nan")))
        elif frame.get("interleaved"):
            out[name]["source"] = "fresh: timed in this run, set by set in turns with the candidate"
            out[name]["interleaved"] = True
        else:
            out[name]["source"] = "fresh: timed in this run"
        if frame.get("clocked"):  # sandbox/runner/process/clocking.py
            out[name]["clocked"] = True
            out[name]["clock"] = ("the runner's, outside the timed process: each call's window less "
                                  f"{float(frame.get('clock_overhead_ms') or 0):.4f} ms, the clock's own cost")
        if frame.get("loadavg"):
            out[name]["loadavg"] = frame["loadavg"]  # 1-minute load average before and after timing
        if frame.get("host_ms"):  # CUDA: the timed and the null pass's medians per phase (a diagnosis)
            out[name]["host_ms"] = frame["host_ms"]
        for key in ("faults", "preempted"):  # per call: page faults, involuntary context switches
            if frame.get(key):
                out[name][f"{key}_per_call"] = statistics.median(frame[key])
    post = cand.first("post_timing") or {}
    names = list((post.get("launch_names") or {}).keys())
    real = device == "cuda" or (native_cpu and bool(names) and all(n.startswith("native:") for n in names))
    if device != "cuda" and real:
        out["label"] = cpu_label(runs.get("candidate", first))
        out["cpu_model"] = runs.get("candidate", first).get("cpu_model")
        out["threads"] = runs.get("candidate", first).get("threads")
        out["allocator"] = runs.get("candidate", first).get("allocator")
        out["flush_bytes"] = runs.get("candidate", first).get("flush_bytes")
        mismatch = {f.get("threads") for f in runs.values()}
        if len(mismatch) > 1:
            out["note"] = f"thread counts differ between timed runs: {sorted(map(str, mismatch))}"
            real = False
    cand_t = out.get("candidate")
    for base, key in (("baseline_eager", "speedup_vs_eager"), ("baseline_compile", "speedup_vs_compile")):
        b = out.get(base)
        if real and cand_t and b and cand_t["median_ms"] > 0:
            out[key] = {"value": b["median_ms"] / cand_t["median_ms"],
                        "low": b["q1_ms"] / max(cand_t["q3_ms"], 1e-9), "high": b["q3_ms"] / max(cand_t["q1_ms"], 1e-9)}
    if device != "cuda" and not real:
        out.setdefault("note", "no GPU: speedup not reported; these CPU timings (eager torch / Triton's interpreter) "
                               "say nothing about speed")
    if compile_missing:
        out["compile_missing"] = compile_missing
    return out

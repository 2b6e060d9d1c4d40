"""Where a judge run spends its time, by phase (``cost`` in the result).

The judge times each sandbox job from outside (fork, frames, everything);
inside a job, the runner's stamps on the frames (one clock, outside the
child) split it into phases: the reference's trials and its baselines (their
warm-ups apart: torch.compile's compilation happens in its warm-up), the
candidate's trials, warm-up, timed pass, null pass and ablation. Numbers are
seconds, rounded to milliseconds.
"""

from __future__ import annotations

from typing import Any

from .drivers.base import JobOutcome


def _span(outcome: JobOutcome, start: str, end: str) -> float | None:
    """Seconds between two phases, less the time the runner held the job (turns)."""
    a, b = outcome.stamp(start), outcome.stamp(end)
    return None if a is None or b is None else max(0.0, b - a - outcome.paused_within(a, b))


def _stamps(outcome: JobOutcome, kind: str) -> list[float]:
    return [f["_t"] for f in outcome.frames if f.get("kind") == kind and isinstance(f.get("_t"), float)]


def _trials_span(outcome: JobOutcome) -> float | None:
    loaded, trials = _stamps(outcome, "loaded"), _stamps(outcome, "trial")
    return max(trials) - loaded[0] if loaded and trials else None


def phases(ref: JobOutcome | None, cand: JobOutcome | None) -> dict[str, float]:
    out: dict[str, float | None] = {}
    if ref is not None:
        out["reference_trials_s"] = _trials_span(ref)
        for name in ("baseline_eager", "baseline_compile"):
            out[f"{name}_s"] = _span(ref, f"{name}:loop_start", f"{name}:loop_end")
            # warm-up calls; for torch.compile its compilation, most of a cold reference job
            out[f"{name}_warmup_s"] = _span(ref, f"{name}:warm_start", f"{name}:warm_end")
    if cand is not None:
        out["candidate_trials_s"] = _trials_span(cand)
        out["candidate_warmup_s"] = _span(cand, "candidate:warm_start", "candidate:warm_end")
        out["candidate_timing_s"] = _span(cand, "candidate:loop_start", "candidate:loop_end")
        out["candidate_null_pass_s"] = _span(cand, "candidate:null_start", "candidate:null_end")
        post, abl = _stamps(cand, "post_timing"), _stamps(cand, "ablation")
        out["ablation_s"] = abl[0] - post[0] if post and abl else None
    return {k: round(v, 3) for k, v in out.items() if v is not None}


class Spent:
    """Seconds per sandbox job, as the judge saw them (``add`` around each job)."""

    def __init__(self) -> None:
        self.jobs: dict[str, float] = {}

    def add(self, name: str, seconds: float) -> None:
        self.jobs[f"{name}_job_s"] = round(self.jobs.get(f"{name}_job_s", 0.0) + seconds, 3)

    def report(self, ref: JobOutcome | None, cand: JobOutcome | None, total_s: float) -> dict[str, Any]:
        jobs = sum(self.jobs.values())
        return {**self.jobs, **phases(ref, cand), "judge_s": round(max(0.0, total_s - jobs), 3),
                "total_s": round(total_s, 3)}

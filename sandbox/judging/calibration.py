"""A candidate that misses on values alone, by less than the reference's own float32
rounding: the reference once more in float64 on those trials, for the checks to compare
against (``verdict/compare.calibrated_close``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..drivers.base import JobOutcome, SandboxError
from ..verdict import checks as C
from ..verdict import compare
from .kept_references import nbytes

if TYPE_CHECKING:
    from ..options import EvalOptions


# Checks a candidate may fail on values alone, where the float64 reference can tell rounding
# from error (``calibrate``).
CALIBRATED_CHECKS = {"correctness", "perturbed_sizes", "domain_inputs", "post_timing"}
CALIBRATED_BYTES = 256 << 20  # the float32 outputs of the trials to run again, at the most


def noted(check: C.Check, before: C.Check, trials: list[int], said: str = "") -> C.Check:
    """A check that passes only against the float64 reference says so (and, with ``said``
    from ``conditioning``, that the reference is ill-conditioned)."""
    if before.outcome != C.FAIL or check.outcome != C.PASS:
        return check
    why = said or "the float32 reference is itself that far from it (rounding in another order)"
    return C.Check(check.name, C.PASS, f"passed against the reference run in float64 on trial(s) {trials}: {why}; "
                   f"in float32: {before.detail[:300]}")


def conditioning(ref_trials: dict[int, dict[str, Any]], trials: list[int]) -> str:
    """The worst-conditioned output of the calibrated trials, described, where the reference
    is ill-conditioned there (``compare.Conditioning``); else empty."""
    worst: compare.Conditioning | None = None
    for i in trials:
        for r, r64 in zip(ref_trials[i].get("outputs") or [], ref_trials[i].get("outputs64") or []):
            if compare.is_float_pair(r, r64):
                cond = compare.Conditioning.of(r, r64)
                if cond.ill and (worst is None or cond.worst / max(1.0, cond.top) > worst.worst / max(1.0, worst.top)):
                    worst = cond
    return worst.describe() if worst is not None else ""


def calibrate(run_job: Callable[[dict[str, Any]], JobOutcome], options: EvalOptions, ref_job: dict[str, Any],
              plan: list[dict[str, Any]], ref_trials: dict[int, dict[str, Any]], cand: JobOutcome,
              found: list[C.Check]) -> list[int]:
    """Where the candidate failed on values alone, by less than the reference's own float32
    rounding could account for: the reference once more in float64 on those trials (the
    timing sets too when the timed outputs missed), its outputs kept beside the float32 ones
    (``outputs64``) for the checks to compare against (``compare.calibrated_close``). Not for a
    large problem, nor a reference that draws random numbers. The trials calibrated."""
    failed = {c.name for c in found if c.outcome == C.FAIL}
    if not failed or not failed <= CALIBRATED_CHECKS or ref_job.get("large") \
            or any(t.get("random") for t in ref_trials.values()):
        return []
    cand_trials = {f["index"]: f for f in cand.of_kind("trial") if isinstance(f.get("index"), int)}
    want = [i for i, spec in enumerate(plan) if spec["tag"] != "timing" and "outputs64" not in ref_trials.get(i, {})
            and "outputs" in ref_trials.get(i, {}) and "outputs" in cand_trials.get(i, {})
            and compare.could_calibrate(ref_trials[i]["outputs"], cand_trials[i]["outputs"], options.tolerance)]
    if "post_timing" in failed:
        want += [i for i, spec in enumerate(plan) if spec["tag"] == "timing"
                 and "outputs" in ref_trials.get(i, {}) and "outputs64" not in ref_trials[i]]
    if not want or sum(nbytes(ref_trials[i]["outputs"]) for i in want) > CALIBRATED_BYTES:
        return []
    job = {"role": "reference64", "trials": [plan[i] for i in want],
           **{k: ref_job[k] for k in ("source", "filename", "device", "constants", "defaults")}}
    try:
        outcome = run_job(job)
    except SandboxError:
        return []
    done = [f for f in outcome.of_kind("trial64") if "outputs" in f and f.get("index") in ref_trials]
    for f in done:
        ref_trials[f["index"]]["outputs64"] = f["outputs"]
    return sorted(f["index"] for f in done)

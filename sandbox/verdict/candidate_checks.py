"""Every check of one candidate, from the reference's and the candidate's runs (plain
frames), and the timed parties against the machine's ceilings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import ceilings
from ..drivers.base import JobOutcome
from . import checks as C
from . import roofline, sampled, timer_checks, work_share

if TYPE_CHECKING:
    from ..options import EvalOptions


def machine_limits(plan: list[dict[str, Any]], ref_trials: dict[int, dict[str, Any]], timing: dict[str, Any],
                   device: str) -> tuple[dict[str, Any], C.Check]:
    """The timed parties against this machine's kept ceilings (``verdict/roofline.py``), and
    ``within_physical_limits``. Timings that measure speed only: native kernels on the CPU
    (the speedup reported), CUDA."""
    real = "speedup_vs_eager" in timing or "speedup_vs_compile" in timing
    first = next((ref_trials[s["index"]] for s in plan if s["tag"] == "timing" and "work" in ref_trials.get(s["index"], {})),
                 {})
    kept = ceilings.kept(int(timing.get("threads") or 0), device) if real and device == "cpu" else None
    roof = roofline.roofline(timing, first.get("work") or {}, kept)
    return roof, roofline.check(roof, real)


def candidate_checks(plan: list[dict[str, Any]], ref: JobOutcome, ref_trials: dict[int, dict[str, Any]],
                     cand: JobOutcome, options: EvalOptions, device: str, native_cpu: bool = False) -> list[C.Check]:
    loaded = cand.first("loaded")
    if loaded is None:
        err = cand.first("error")
        runtime = C.runtime_check(cand, options.timeout, options.memory_mb)
        detail = err["message"] if err else runtime.detail
        return [C.Check("compile", C.FAIL, f"the candidate did not load: {detail}"), runtime]
    ref_loaded = ref.first("loaded") or {}
    cand_trials = {f["index"]: f for f in cand.of_kind("trial") if isinstance(f.get("index"), int)}
    found = [C.Check("compile", C.PASS), C.signature_check(ref_loaded.get("signature", {}), loaded["signature"]),
             C.runtime_check(cand, options.timeout, options.memory_mb)]
    post = cand.first("post_timing")
    found += [C.timed_inputs_check(c, post) if c.name == "inputs_unchanged" else c
              for c in C.trial_checks(plan, ref_trials, cand_trials, options.tolerance)]
    timed = any(s["tag"] == "timing" for s in plan)
    if timed and cand.finished:
        found.append(C.post_timing_check(plan, ref_trials, post, options.tolerance))
        found.append(C.fresh_outputs_check(post))
        found.append(timer_checks.corroboration_check(cand, "candidate", device, enforce=native_cpu))
        cand_timing = next((f for f in cand.of_kind("timing") if f.get("name") == "candidate"), None)
        base = next((f for f in ref.of_kind("timing") if f.get("name") == "baseline_eager"), None)
        parity = C.thread_parity_problem(cand_timing, (base or cand_timing or {}).get("threads")) \
            if native_cpu else None
        found = [C.amend(C.amend(c, parity), C.crosstalk_problem(ref, cand)) if c.name == "no_stray_work" else c
                 for c in found]
    found.append(C.layout_check(plan, ref_trials, cand_trials, post if timed and cand.finished else None))
    provenance, work = C.provenance_check(plan, ref_trials, cand_trials, cand.first("post_timing"))
    found.append(provenance)
    if timed and cand.finished and native_cpu:
        found.append(sampled.check(next((f for f in cand.of_kind("timing") if f.get("name") == "candidate"), None),
                                   work, work_share.fewest_launches(work, cand.first("post_timing"))))
    found.append(C.ops_check(ref_trials, cand_trials))
    if cand.finished:
        found.append(C.ablation_check(ref_trials, cand.first("ablation"), options.tolerance))
    found.append(C.tamper_check(cand))
    return found

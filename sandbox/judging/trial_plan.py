"""The trials of one evaluation: planned before the reference runs (default and perturbed
sizes, a domain trial, the timing sets), then read off what the reference's runner made
of them, and handed on to the candidate's job."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

import torch

from ..drivers.base import JobOutcome
from ..errors import ProblemError
from ..problem import Problem, derived_values, input_bytes
from ..verdict import checks as C

if TYPE_CHECKING:
    from ..options import EvalOptions


def _odd(v: int) -> int:
    return max(1, (v * 3 // 4) | 1) if (v * 3 // 4) | 1 != v else v - 2


def _grow(v: int) -> int:
    return v * 5 // 4 if v % 4 == 0 else (v + max(3, v // 4)) | 1


# One call whose inputs (read off get_inputs) exceed this is "large": KernelBench
# sizes under --fit-memory, hundreds of MB per tensor. Every trial's tensors
# travel to the judge and back to the candidate, so a large problem gets
# LARGE_TRIALS fresh default trials and perturbed sizes that never grow more
# than one size at a time (see plan_trials). A problem whose inputs are small may
# still be large by its parameters (a 8192 x 8192 GEMM weight, 268 MB a trial, each
# trial's own): the reference's runner measures its first trial's tensors (inputs,
# outputs, state) against the same bound and skips the trials marked for a problem
# of the other kind (``unless_large`` / ``if_large``; ``drop_skipped``).
LARGE_INPUT_BYTES = 256 << 20
LARGE_TRIALS = 2


def perturbations(problem: Problem, large: bool = False) -> list[dict[str, int]]:
    """Sets of sizes other than the defaults: odd shrinks (breaks power-of-two
    assumptions), proportional shrinks (keeps divisibility between sizes), and a
    growth by about a quarter (a grid or buffer sized for the defaults no longer
    covers the output).

    Sizes written as literals in get_inputs are often tied to literals in the
    model (``nn.Linear(1024, ...)``), so besides all of them at once each is also
    shrunk on its own (up to four), and the first grown on its own: the batch
    size can change when the feature size cannot. Sets the reference cannot run
    are skipped by the judge.

    ``large``: the odd shrink and a growth of the first size alone (memory
    grows by about a quarter, not by a quarter per size)."""
    sizes = problem.size_constants()
    if not sizes:
        dims = problem.literal_dims
        if not dims:
            return []
        first = next(iter(dims))
        if large:
            return [{k: _odd(v) for k, v in dims.items()}, {first: _grow(dims[first])}]
        sets = [{k: _odd(v) for k, v in dims.items()}, {k: _grow(v) for k, v in dims.items()}]
        if len(dims) > 1:
            sets += [{k: _odd(v)} for k, v in list(dims.items())[:4]]
            sets.append({first: _grow(dims[first])})
        return sets
    odd = {k: _odd(v) for k, v in sizes.items()}
    prop = {k: v * 3 // 4 if v % 4 == 0 else v - 1 for k, v in sizes.items()}
    grow = {k: _grow(v) for k, v in sizes.items()}
    if large:
        first = next(iter(sizes))
        return [odd, {first: _grow(sizes[first])}]
    return ([odd] if odd == prop else [odd, prop]) + [grow]


def plan_trials(problem: Problem, options: EvalOptions, reps: int = 5) -> list[dict[str, Any]]:
    """Correctness trials (default and perturbed sizes, then a ``domain`` trial: default
    sizes, inputs stretched by ``runner/phases/domain.py``), then up to ``reps``
    timing sets: one model (one seed), fresh inputs each -- every timed
    repetition runs on a set of its own, which the reference's runner trims
    to its memory and time budget (``timed.set_cap``)."""
    seed = lambda: secrets.randbelow(2**31 - 1)  # noqa: E731  (fresh at every evaluation)
    large = (input_bytes(problem) or 0) > LARGE_INPUT_BYTES
    trials = min(options.trials, LARGE_TRIALS) if large else options.trials
    # Not large by its inputs: the runner may still find it large by its first trial.
    plan = [{"tag": "default", "seed": seed(), "input_seed": seed(),
             **({"unless_large": True} if i >= LARGE_TRIALS and not large else {})} for i in range(trials)]
    large_sets = perturbations(problem, True)
    small_sets = perturbations(problem)
    chosen = [(s, {}) for s in large_sets] if large else \
        [(s, {} if s in large_sets else {"unless_large": True}) for s in small_sets] \
        + [(s, {"if_large": True}) for s in large_sets if s not in small_sets]
    for sizes, when in chosen:
        # Values computed from the sizes (``bias_shape = (out_channels, 1, 1)``) follow
        # them, as in a fitted reference; where the reference cannot run so, the sizes alone
        # (a reference may need such a value to keep its default: ``fallback``, run only when
        # the trial before it failed), except on a large problem, where every trial is costly.
        derived = derived_values(problem, sizes)
        if derived:
            plan.append({"tag": "perturbed", "seed": seed(), "input_seed": seed(), "constants": {**sizes, **derived},
                         **when})
        if not (derived and (large or "if_large" in when)):
            plan.append({"tag": "perturbed", "seed": seed(), "input_seed": seed(), "constants": sizes,
                         **({"fallback": True, "unless_large": True} if derived else when)})
    if not large:
        # ``runner/phases/domain.py``: inputs scaled and given outliers, where a cheap approximation breaks
        plan.append({"tag": "domain", "seed": seed(), "input_seed": seed(), "unless_large": True})
    shared = seed()
    sets = reps if options.timing_sets is None else min(options.timing_sets, reps)
    plan += [{"tag": "timing", "seed": shared, "input_seed": seed()} for _ in range(max(0, sets))]
    for i, spec in enumerate(plan):
        spec["index"] = i
        spec["forward_seed"] = seed()  # set before every call on the trial's inputs (harness.forward_seed)
    return plan


def drop_skipped(plan: list[dict[str, Any]], ref: JobOutcome) -> list[dict[str, Any]]:
    """The plan without the trials the reference's runner skipped (marked for a problem
    of the other kind: ``unless_large`` / ``if_large``), renumbered, and the reference's
    trial frames with it (copies: a kept reference holds the originals)."""
    skipped = {f.get("index") for f in ref.of_kind("trial") if f.get("skipped")}
    if not skipped:
        return plan
    kept = [p for p in plan if p["index"] not in skipped]
    new = {p["index"]: i for i, p in enumerate(kept)}
    ref.frames = [f if f.get("kind") != "trial" else dict(f, index=new.get(f["index"], f["index"]))
                  for f in ref.frames if f.get("kind") != "trial" or f.get("index") not in skipped]
    return [dict(p, index=i) for i, p in enumerate(kept)]


def candidate_trial(spec: dict[str, Any], ref_trial: dict[str, Any], clocked: bool) -> dict[str, Any]:
    """A trial as the candidate's job gets it: the reference's inputs, model and weights, no
    input seed (the candidate could draw the inputs itself); a timing set the runner holds
    (``clocked``: runner/measure/clocking.py) as its inputs' shapes alone."""
    trial = {k: v for k, v in spec.items() if k != "input_seed"}
    trial.update({k: ref_trial[k] for k in ("init_inputs", "inputs", "state_dict") if k in ref_trial})
    if clocked and spec["tag"] == "timing":
        trial["like"] = [{"shape": list(v.shape), "dtype": str(v.dtype).removeprefix("torch.")}
                         if isinstance(v, torch.Tensor) else v for v in trial.pop("inputs", [])]
    return trial


def made_sets(plan: list[dict[str, Any]], ref: JobOutcome) -> list[dict[str, Any]]:
    """The plan without the timing sets the reference's runner did not make
    (trimmed to its memory and time budget); they are the plan's last entries."""
    made = {f.get("index") for f in ref.of_kind("trial")}
    return [p for p in plan if p["tag"] != "timing" or p["index"] in made or not ref.finished]


def reference_trials(ref: JobOutcome, name: str, plan: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    err = ref.first("error")
    if err is not None:
        raise ProblemError(f"the reference is unusable: {err['message']}")
    if not ref.finished:
        raise ProblemError(f"{name}: the reference did not finish ({ref.ended() or 'crashed'}) {C.last_phase(ref)}")
    trials = {f["index"]: f for f in ref.of_kind("trial")}
    for i, spec in enumerate(plan):
        if spec["tag"] in ("default", "timing") and "error" in trials.get(i, {"error": "missing"}):
            raise ProblemError(f"the reference failed at its default sizes: {trials.get(i, {}).get('error', 'no result')}")
    return trials

"""A tuning pass inside a runner child: many variants of one proposal timed side by side.

Advisory: it ranks variants and decides nothing. The reference is built once
and run on one input set; each variant (a candidate file whose native sources
the judge built) is built with the reference's weights and run on that set,
and one whose output is not within the judge's tolerances is not timed. Every
right variant, and eager, are then timed set by set on fresh input sets
(``timing.time_cpu_parties``: the cache flushed before each call, each output
dropped before the next call), within a time budget. The full judge then
judges the fastest few from scratch, in its own jobs, with every check.

The variants share this process (one import, one warm runner child): a variant
could disturb another's timing, which can only misorder the ranking, never
pass a kernel. They also share the reference model's weights (``_share_weights``):
twenty-four variants of a GEMM with 150 MB of weights hold one copy, not
twenty-five, within the job's memory.
"""

from __future__ import annotations

from typing import Any

import torch

from .. import guards
from ..measure import timed, timing
from ..measure.timed import seed_all
from ..native import library as native
from .harness import Emit, build, snapshot_outputs
from .loader import LoadError, describe, load_module

MIN_TUNE_SETS = 2
TUNE_WARMUP_CALLS = 1
# Variants checked before the pass's time budget may leave the rest out (``_over_budget``).
MIN_TUNED = 4
# A variant's share of the timed pass, in multiples of its check (a first call and a
# comparison): its warm-up and its sets, each loaded into the buffers first.
TIMING_PER_CHECK = 2.0


def _over_budget(checked_s: float, checked: int, right: int, pass_budget_s: float) -> bool:
    """Whether checking one more variant would take the pass past its budget: the checks
    so far, and the timing of every right one, projected from what a check cost. At a
    gigabyte a call a variant's check alone takes a second or more, and twenty-four of
    them had taken the pass to 95 s; at a few milliseconds a call all of them fit."""
    if right < MIN_TUNED or checked == 0:
        return False
    per_check = checked_s / checked
    return checked_s + per_check + (right + 1) * per_check * TIMING_PER_CHECK > pass_budget_s


def _ranks_nothing(checked_s: float, checked: int, pass_budget_s: float, judged: int) -> int:
    """How many variants the whole pass could check and time within its budget, when that is
    no more than the ``judged`` ones the search judges in full anyway (0 otherwise): the search
    judges the engine's first ``judged`` variants whatever the pass says, so a pass that can
    rank no others only costs its time (a GB a call: 4 variants in 32 s, then exactly those 4
    judged). Decided from what the first check cost."""
    if judged <= 0 or checked == 0 or pass_budget_s <= 0:
        return 0
    fits = int(pass_budget_s // ((checked_s / checked) * (1.0 + TIMING_PER_CHECK)))
    return max(fits, 1) if fits <= judged else 0


def _close(got: list[Any], want: list[Any], tolerances: dict[str, list[float]],
           override: list[float] | None) -> str:
    """'' when every output matches within the judge's tolerances, else why not."""
    if len(got) != len(want):
        return f"{len(got)} outputs, the reference returns {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        if not (isinstance(g, torch.Tensor) and isinstance(w, torch.Tensor)):
            continue
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"output {k}: {g.dtype}{list(g.shape)}, the reference's is {w.dtype}{list(w.shape)}"
        atol, rtol = (override if override and w.dtype.is_floating_point else
                      tolerances.get(str(w.dtype).removeprefix("torch."), [1e-2, 1e-2] if w.dtype.is_floating_point
                                     else [0.0, 0.0]))
        if not torch.allclose(g, w, atol=atol, rtol=rtol, equal_nan=True):
            diff = (g.double() - w.double()).abs().nan_to_num(float("inf")).max().item()
            return f"output {k}: max abs diff {diff:.3g} (atol {atol:g}, rtol {rtol:g})"
    return ""


def _share_weights(candidate: torch.nn.Module, model: torch.nn.Module) -> None:
    """The variant's parameters and buffers become the reference's own tensors wherever
    names, shapes and dtypes agree (its copies are freed). Only the tuning pass does this:
    the judge builds every candidate with weights of its own."""
    theirs = model.state_dict(keep_vars=True)
    own = candidate.state_dict(keep_vars=True)
    same = {k: v for k, v in theirs.items()
            if k in own and own[k].shape == v.shape and own[k].dtype == v.dtype}
    if same:
        candidate.load_state_dict(same, strict=False, assign=True)


def run_tune(job: dict[str, Any], emit: Emit) -> None:
    timing.grant_threads(job.get("threads"))
    native.prebuilt = dict(job.get("native_prebuilt") or {})
    launches = guards.launches.LaunchCounter()  # as around every candidate's native calls in the judge
    launches.install()
    reference = load_module(job["source"], job["filename"], "kforge_reference")
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(reference, name):
            raise LoadError(f"{job['filename']}: defines no `{name}`")
    reference.__dict__.update(job.get("defaults") or {})  # the sizes the judge named, at their literal values
    seed = int(job.get("seed", 0))
    seed_all(seed)
    init_inputs = list(reference.get_init_inputs())
    trial = {"seed": seed, "init_inputs": init_inputs}
    model = build(reference, "Model", trial, "cpu")
    trial["state_dict"] = model.state_dict()
    sets, expected = _input_sets(job, reference, model, seed)
    parties: list[tuple[str, Any]] = [("eager", model)]
    pass_budget_s = float(job.get("pass_budget_s") or 0.0)
    judged = int(job.get("judged") or 0)  # the variants the search judges in full whatever the pass says
    checks_started, checked = timing._perf_ns(), 0
    for variant in job["variants"]:
        index, filename = variant["index"], variant["filename"]
        frame: dict[str, Any] = {"kind": "variant", "index": index}
        checked_s = (timing._perf_ns() - checks_started) / 1e9
        fits = _ranks_nothing(checked_s, checked, pass_budget_s, judged)
        if fits:
            frame.update(status="skipped", detail=f"the tuning pass's time budget ({pass_budget_s:g} s) holds "
                                                  f"about {fits} variant(s) at {checked_s / checked:.1f} s a check, "
                                                  f"no more than the {judged} the search judges in full: the "
                                                  "engine's order stands")
            emit(frame)
            continue
        if pass_budget_s and _over_budget(checked_s, checked, len(parties) - 1, pass_budget_s):
            frame.update(status="skipped", detail=f"the tuning pass's time budget ({pass_budget_s:g} s): "
                                                  f"{checked} variants checked in {checked_s:.1f} s")
            emit(frame)
            continue
        checked += 1
        try:
            module = load_module(variant["source"], filename, f"kforge_variant_{index}")
            candidate = build(module, "ModelNew", trial, "cpu")
            _share_weights(candidate, model)
            seed_all(seed)
            t0 = timing._perf_ns()
            with torch.no_grad():
                out = candidate(*sets[0])
            frame["first_call_ms"] = (timing._perf_ns() - t0) / 1e6
            wrong = _close(snapshot_outputs(out)[1], expected, job.get("tolerances") or {}, job.get("tolerance"))
            del out
        except Exception as exc:  # LoadError included: one variant's failure is its own
            frame.update(status="error", detail=describe(exc, filename))
            emit(frame)
            continue
        if wrong:
            frame.update(status="wrong", detail=wrong)
        else:
            frame["status"] = "right"
            parties.append((str(index), candidate))
        emit(frame)
    _time_side_by_side(job, emit, parties, sets)
    emit({"kind": "tune_meta", "cpu_model": timing.cpu_model(), "threads": torch.get_num_threads(),
          "sets": len(sets), "launches": launches.count})


def _input_sets(job: dict[str, Any], reference: Any, model: Any, seed: int) -> tuple[list[list[Any]], list[Any]]:
    """The reference's input sets (as many as fit the job's memory, at least ``MIN_TUNE_SETS``)
    and its outputs on the first, the answer every variant must give."""
    sets: list[list[Any]] = []
    expected: list[Any] = []
    wanted = max(MIN_TUNE_SETS, int(job.get("sets", MIN_TUNE_SETS)))
    while len(sets) < wanted:  # ``wanted`` shrinks to the memory cap once the first set is measured
        seed_all(seed + 1 + len(sets))
        sets.append(list(reference.get_inputs()))
        if len(sets) == 1:
            seed_all(seed)  # every forward on the first set from the same generators (a random op's draws)
            with torch.no_grad():
                expected = snapshot_outputs(model(*sets[0]))[1]
            cap = timed.timing_bytes(job.get("memory_mb")) // max(1, timed.nbytes(sets[0]) + timed.nbytes(expected))
            wanted = max(MIN_TUNE_SETS, min(wanted, cap))
    return sets, expected


def _time_side_by_side(job: dict[str, Any], emit: Emit, parties: list[tuple[str, Any]], sets: list[list[Any]]) -> None:
    """Eager and every right variant timed call by call in turns, one ``tuned`` frame each."""
    # One set of input buffers for every party (each call loads its set into them first): a
    # copy per party had held 25 copies of a 470 MB input at once (KernelBench's ReLU under
    # --fit-memory 1), past the job's memory limit.
    first = timed.Party(parties[0][1], sets, parties[0][0], sets[0], lambda: None)
    timed_parties = [first] + [timed.Party(m, sets, label, sets[0], lambda: None, buffers=first.buffers)
                               for label, m in parties[1:]]
    loops = [timing.Loop(len(sets), timed.load_set(p.load, p.sets), p.check, p.warm) for p in timed_parties]
    flush = timing.CacheFlush()
    with torch.no_grad():
        times = timing.time_cpu_parties([(p.call, loop) for p, loop in zip(timed_parties, loops)],
                                        float(job.get("budget_s", 5.0)), flush, TUNE_WARMUP_CALLS)
    for (label, _), got in zip(parties, times):
        emit({"kind": "tuned", "name": label, "times_ms": got})

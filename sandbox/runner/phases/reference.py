"""What a runner child does with a reference job: every trial's outputs and what the
reference recorded (its ops, its least work), then the baselines timed on the sets it made.

Each trial sends a frame as soon as it is done, so a crash mid-way still leaves the judge
with everything before it (the shared helpers are in ``harness.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from ..measure import clocked, provenance, timed, timing
from ..measure.timed import flatten_output, seed_all
from . import compiled, domain
from .harness import (
    Emit,
    _clone,
    _to,
    build,
    forward_seed,
    snapshot_outputs,
    snapshot_taken,
    stored_elements,
    sync,
    taken,
    to_cpu,
    to_device,
)
from .loader import LoadError, describe, load_module, signature_of


def draws_randomly(model: Any, inputs: list[Any], outputs: list[Any], seed: int, device: str) -> bool:
    """Whether the reference's output depends on the generator (dropout in training mode): one
    more call on the same inputs under another seed. Only then does the candidate's rerun keep
    its first call's forward seed; otherwise it gets another one, so a kernel drawing noise from
    torch's generator still fails ``deterministic``."""
    seed_all(seed + 1)
    with torch.no_grad():
        again = snapshot_outputs(model(*inputs))[1]
    sync(device)
    return len(again) != len(outputs) or not all(timed.same_bits(a, b) for a, b in zip(outputs, again))


@dataclass
class _Reference:
    """One reference job's state across its trials."""

    job: dict[str, Any]
    module: Any
    defaults: dict[str, Any]
    planned: int  # timing sets the judge asked for
    cap: int  # timing sets that fit (set by the first one's size and time)
    replayed: set[int]  # the judge holds these trials' results from an earlier run
    ran: set[int]  # trials that gave outputs (a replayed one did, or it would not be kept)
    large: bool | None  # by its inputs (the judge read them off get_inputs), else by its first trial's tensors
    sets: list[list[Any]] = field(default_factory=list)
    warm: list[Any] | None = None
    timing_model: Any = None
    checked_random: bool = False

    def skip(self, index: int, trial: dict[str, Any], emit: Emit) -> bool:
        if trial["tag"] == "timing" and len(self.sets) >= self.cap or index in self.replayed:
            return True  # not needed: the judge times the sets that were made
        if trial.get("fallback") and index - 1 in self.ran:
            return True  # the trial it stands in for ran
        if trial.get("unless_large") and self.large or trial.get("if_large") and not self.large:
            emit({"kind": "trial", "index": index, "skipped": "large" if self.large else "not large"})
            return True
        return False


def run_reference(job: dict[str, Any], emit: Emit) -> None:
    device = job["device"]
    if device == "cpu":
        timing.grant_threads(job.get("threads"))
    module = load_module(job["source"], job["filename"], "kforge_reference")
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise LoadError(f"{job['filename']}: defines no `{name}`")
    emit({"kind": "loaded", "signature": signature_of(module.Model)})
    # Sizes the judge named in place of get_inputs' literals start at those literals.
    defaults = {**(job.get("defaults") or {}),
                **{k: module.__dict__[k] for k in job.get("constants", []) if k in module.__dict__}}
    planned = sum(1 for t in job["trials"] if t["tag"] == "timing")
    replayed = set(job.get("replayed") or ())
    ref = _Reference(job, module, defaults, planned, planned, replayed, set(replayed), True if job.get("large") else None)
    for index, trial in enumerate(job["trials"]):
        if not ref.skip(index, trial, emit):
            _reference_trial(ref, index, trial, emit)
    module.__dict__.update(defaults)
    if ref.sets and job.get("time_reps") and ref.timing_model is not None:
        warm_inputs = ref.warm if ref.warm is not None else ref.sets[0]
        time_baselines(job, emit, ref.timing_model, ref.sets, warm_inputs, lambda: sync(device))


def _reference_trial(ref: _Reference, index: int, trial: dict[str, Any], emit: Emit) -> None:
    """One trial of the reference: its outputs and what it recorded, as one frame."""
    job, module, device = ref.job, ref.module, ref.job["device"]
    module.__dict__.update(ref.defaults)
    module.__dict__.update(trial.get("constants") or {})
    first_set = trial["tag"] == "timing" and ref.timing_model is None
    try:
        seed_all(trial["seed"])
        init_inputs = list(module.get_init_inputs())
        trial = {**trial, "init_inputs": init_inputs}
        # The timing sets share one model (one seed): built once.
        model = ref.timing_model if trial["tag"] == "timing" and ref.timing_model is not None \
            else build(module, "Model", trial, device)
        seed_all(trial["input_seed"])
        inputs = to_device(list(module.get_inputs()), device)
        if trial["tag"] == "domain":
            inputs = domain.stretch(inputs, trial["input_seed"])
        seed_all(forward_seed(trial))
        t0 = timing._perf_ns()
        with torch.no_grad():
            out = model(*inputs)
        sync(device)
        once_s = (timing._perf_ns() - t0) / 1e9
        if trial["tag"] == "domain" and not domain.finite(out):
            emit({"kind": "trial", "index": index, "skipped": "the reference's outputs are not finite there"})
            return
        # Copies to compare a call with another seed against (the first default trial),
        # else taken at once (beside the frames: sent now, one copy into the shared file).
        random_check = trial["tag"] == "default" and not ref.checked_random
        structure, outputs, kinds = snapshot_outputs(out) if random_check else snapshot_taken(out)
        out_bytes = timed.nbytes(flatten_output(out)[1])
    except Exception as exc:
        if trial["tag"] == "domain":  # a reference with no such domain: nothing to compare
            emit({"kind": "trial", "index": index, "skipped": f"the reference cannot run there: {type(exc).__name__}"})
        else:
            emit({"kind": "trial", "index": index, "error": describe(exc, job["filename"])})
        return
    ref.ran.add(index)
    frame: dict[str, Any] = {"kind": "trial", "index": index, "inputs": taken(inputs),
                             "structure": structure, "outputs": outputs, "kinds": kinds,
                             "spans": stored_elements(out)}
    if ref.large is None:
        ref.large = timed.nbytes([*inputs, *model.state_dict().values()]) + out_bytes > job.get("large_bytes", 1 << 62)
    if trial["tag"] == "default" and ref.warm is None:
        ref.warm = inputs
    if trial["tag"] == "timing":
        ref.sets.append(inputs)
        if first_set:
            ref.timing_model = model
            set_bytes = timed.nbytes(inputs) + out_bytes
            ref.cap = timed.set_cap(ref.planned, set_bytes, once_s, float(job.get("time_budget_s", 10.0)),
                                    bool(ref.large), job.get("memory_mb"))
    if trial["tag"] != "timing" or first_set:
        # Later timing sets share the first one's model, state and work.
        recorded = record_ops(model, inputs, device)
        # the least a call must move: every input and parameter read once, every output written once
        recorded["work"]["min_bytes"] = timed.nbytes([*inputs, *model.state_dict().values()]) + out_bytes
        frame.update(init_inputs=to_cpu(init_inputs),
                     state_dict={k: _clone(_to(v, "cpu")) for k, v in model.state_dict().items()},
                     **recorded)
    if random_check:
        ref.checked_random = True
        frame["random"] = draws_randomly(model, inputs, outputs, forward_seed(trial), device)
    emit(frame)


def time_baselines(job: dict[str, Any], emit: Emit, model: torch.nn.Module, sets: list[list[Any]],
                   warm_inputs: list[Any], synced: Callable[[], None]) -> None:
    """Eager, always timed here, in the same run as the candidate; torch.compile
    unless a cached timing of it stands: only if the eager timing cached with
    it agrees with this one (the machine as loaded as then). A job clocked by
    the runner (``clocked``) times both in one pass, call by call in turns with
    the candidate's (``clocked.time_clocked``)."""
    cached = job.get("cached_eager_ms")
    eager = timed.Party(model, sets, "baseline_eager", warm_inputs, synced)
    if job.get("compile_baseline"):
        compiled.unpack(job.get("compiled_cache"))
    if job.get("clocked"):
        # Clocked by the runner, both baselines in the one pass (a cached timing of the
        # compiled one is not used: it was measured otherwise).
        parties = [eager]
        if job.get("compile_baseline"):
            parties.append(timed.Party(torch.compile(model), sets, "baseline_compile", warm_inputs, synced))
        clocked.time_clocked(job, emit, parties, first=lambda: compiled.emit_packed(emit)
                             if job.get("compile_baseline") else None)
        return
    eager_ms = timed.time_parties(job, emit, [eager])[0]
    if job.get("compile_baseline") and not (cached and timing.agrees(eager_ms, cached)):
        timed.emit_timing(job, emit, torch.compile(model), sets, "baseline_compile", warm_inputs, synced)
        compiled.emit_packed(emit)


def record_ops(model: torch.nn.Module, inputs: list[Any], device: str) -> dict[str, Any]:
    """The reference's ops, and its work (FLOPs, bytes by op) by the same
    recorder that labels the candidate's data flow."""
    recorder = provenance.Provenance(None, inputs + list(model.parameters()) + list(model.buffers()), labels=False)
    with torch.no_grad(), recorder:
        model(*inputs)
    sync(device)
    return {"ops": recorder.ops, "work": provenance.reference_work(recorder)}

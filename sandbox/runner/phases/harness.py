"""What a runner child does with one job: build native code, or run the candidate (the
reference's side is ``reference.py``), and the helpers both sides share.

Each phase sends a frame as soon as it is done, so a crash mid-way still
leaves the judge with everything before it. Frames hold plain tensors and
numbers only; every comparison is made by the judge, never here.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import torch

from .. import guards
from ..channel.shared import DTYPES
from ..measure import clocked, provenance, timed, timing
from ..measure.timed import flatten_output, seed_all
from ..native import library as native
from .loader import LoadError, describe, load_module, signature_of

Emit = Callable[[dict[str, Any]], None]

_clone = torch.Tensor.clone
_detach = torch.Tensor.detach
_to = torch.Tensor.to
_copy = torch.Tensor.copy_
_Tensor = torch.Tensor


def to_device(values: list[Any], device: str) -> list[Any]:
    return [_to(v, device) if isinstance(v, _Tensor) else v for v in values]


def blank(like: list[Any]) -> list[Any]:
    """Zeroed tensors of the shapes and dtypes ``like`` names ({"shape", "dtype"}; any other
    value is itself), every page written."""
    return [torch.zeros(v["shape"], dtype=DTYPES[v["dtype"]])
            if isinstance(v, dict) and set(v) == {"shape", "dtype"} else v for v in like]


def to_cpu(values: list[Any]) -> list[Any]:
    return [_clone(_to(_detach(v), "cpu")) if isinstance(v, _Tensor) else v for v in values]


# Set by the runner where large tensors travel beside the frames (runner/channel/shared.py): sends
# values now and gives what a frame carries in their place.
send_now: Callable[[list[Any]], list[Any]] | None = None


def taken(values: list[Any]) -> list[Any]:
    """The values as they are at this moment, for a frame sent later (calls, checks and
    sleeps come between). Beside the frames the tensors are sent now, with no copy in this
    process: an input a call left as the judge sent it goes back as the judge's own file
    (compared byte for byte). Otherwise, copies."""
    if send_now is not None and all(not isinstance(v, _Tensor) or v.device.type == "cpu" for v in values):
        sent = send_now([_detach(v) if isinstance(v, _Tensor) else v for v in values])
        return [to_cpu([v])[0] if isinstance(v, _Tensor) else v for v in sent]  # what stayed: copies
    return to_cpu(values)


def snapshot_outputs(out: Any, into: list[Any] | None = None) -> tuple[str, list[Any], list[str]]:
    """Copies of the outputs to the CPU, and their exact types (subclasses show).
    ``into``: CPU tensors to copy into where shape and dtype match (memory
    already touched: no page faults), instead of new clones."""
    structure, items = flatten_output(out)
    kinds, copies = [], []
    for k, item in enumerate(items):
        kind = type(item)
        kinds.append(f"{kind.__module__}.{kind.__qualname__}")
        dst = into[k] if into is not None and k < len(into) else None
        if kind is not _Tensor:
            copies.append(None)
        elif isinstance(dst, _Tensor) and dst.shape == item.shape and dst.dtype == item.dtype:
            copies.append(_copy(dst, _detach(item)))
        else:
            copies.append(_clone(_to(_detach(item), "cpu")))
    return structure, copies, kinds


def snapshot_taken(out: Any) -> tuple[str, list[Any], list[str]]:
    """``snapshot_outputs`` taken at once (``taken``): beside the frames, the outputs are
    sent now, from their own memory (one copy, into the shared file, instead of two)."""
    structure, items = flatten_output(out)
    kinds = [f"{type(item).__module__}.{type(item).__qualname__}" for item in items]
    return structure, taken([item if type(item) is _Tensor else None for item in items]), kinds


def stored_elements(out: Any) -> list[int | None]:
    """Per output, the most elements its memory can hold: 1 + the sum over dims of
    (size - 1) x |stride| (0 when empty; None for what is not a tensor). Fewer than
    it has means some of its elements share memory: an expanded, broadcast or
    overlapping view (``output_layout``)."""
    _, items = flatten_output(out)
    return [None if not isinstance(t, _Tensor) else 0 if t.numel() == 0 else
            1 + sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride(), strict=True)) for t in items]


def sync(device: str) -> None:
    if device == "cuda":
        timing._cuda_sync()


def forward_seed(trial: dict[str, Any]) -> int:
    """The seed set before every call on this trial's inputs, by the reference's runner and the
    candidate's alike: a random op in forward (dropout in training mode) then draws the same
    numbers on both sides, if it draws them as torch does."""
    return int(trial["forward_seed"] if "forward_seed" in trial else trial["input_seed"])


def build(module: Any, cls_name: str, trial: dict[str, Any], device: str) -> torch.nn.Module:
    seed_all(trial["seed"])
    model = getattr(module, cls_name)(*to_device(trial["init_inputs"], device))
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"{cls_name}(...) did not return a torch.nn.Module")
    model = model.to(device)
    state = trial.get("state_dict") or {}
    own = model.state_dict()
    # Same weights as the reference wherever names and shapes agree.
    matching = {k: v for k, v in state.items() if k in own and own[k].shape == v.shape}
    if matching:
        model.load_state_dict(matching, strict=False)
    model._kforge_unloaded = sorted(set(state) - set(matching))  # reported next to correctness diffs
    return model


def run_build(job: dict[str, Any], emit: Emit) -> None:
    """Compile the native sources the judge extracted (trusted code: only the
    compiler reads the untrusted text) and send each library's bytes back with
    the facts of what compiled (``native_inspect``: the judge's source policy
    judges them); the judge stores both where candidates can only read them.
    Several sources (a tuning pass's variants) compile on every granted CPU."""
    work = tempfile.mkdtemp(prefix="native-")

    def one(src: dict[str, Any]) -> dict[str, Any]:
        try:
            path, facts = native.build_inspected(src["text"], src["lang"], src["name"], cache_dir=work,
                                                 key=src["key"])
            with open(path, "rb") as f:
                data = f.read()
        except native.NativeError as exc:
            return {"kind": "build_error", "key": src["key"], "name": src["name"], "message": str(exc)}
        return {"kind": "built", "key": src["key"], "lib": torch.frombuffer(bytearray(data), dtype=torch.uint8),
                "facts": json.dumps(facts)}

    sources = job["sources"]
    workers = max(1, min(len(sources), timing.granted_cpus()))
    if workers == 1:
        for src in sources:
            emit(one(src))
        return
    with ThreadPoolExecutor(workers) as pool:  # the compilers are processes: threads only wait on them
        for frame in pool.map(one, sources):
            emit(frame)


@dataclass
class _Candidate:
    """One candidate job's state across its trials and its timed pass."""

    job: dict[str, Any]
    module: Any
    launches: Any
    evasion: Any
    guard: Any
    uid: int  # read before the candidate's code ran
    later_call: bool = False  # the first correctness call may start pools; later ones only idle ones
    sets: list[list[Any]] = field(default_factory=list)
    warm: list[Any] | None = None
    timing_model: Any = None
    clocked_inputs: tuple[list[Any], int] | None = None

    def tamper(self) -> list[str]:
        return self.guard.changed() + list(dict.fromkeys(self.evasion.events))

    def recorder(self, model: Any, args: list[Any]) -> provenance.Provenance:
        """What ``model`` holds now and ``args``: native writes proven by canaries, as on every call."""
        return provenance.Provenance(self.launches, list(args) + list(model.parameters()) + list(model.buffers()),
                                     provenance.reachable_tensors(model, self.module), canary=True)


def run_candidate(job: dict[str, Any], emit: Emit) -> None:
    # Bound before the candidate's code runs: a module attribute it replaces later changes nothing here.
    trial_step, timed_pass, last_step = _candidate_trial, _candidate_timed, ablation
    device, filename = job["device"], job["filename"]
    if device == "cpu":
        timing.grant_threads(job.get("threads"))
    # Only libraries the judge built may load; the candidate never compiles.
    native.prebuilt = dict(job.get("native_prebuilt") or {})
    launches = guards.launches.LaunchCounter()
    launches.install()
    evasion = guards.tamper.EvasionWatch()
    evasion.install()
    guard = guards.tamper.TamperGuard()
    uid = os.getuid()
    module = load_module(job["source"], filename, "kforge_candidate")
    cls = getattr(module, "ModelNew", None)
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        raise LoadError(f"{filename}: defines no `ModelNew` subclass of torch.nn.Module")
    emit({"kind": "loaded", "signature": signature_of(cls), "tamper": guard.changed(), "launches": launches.count})
    run = _Candidate(job, module, launches, evasion, guard, uid)
    for index, trial in enumerate(job["trials"]):
        frame: dict[str, Any] = {"kind": "trial", "index": trial.get("index", index)}
        try:
            if not trial_step(run, index, trial, frame):
                continue  # a timing set, kept for the timed pass
        except Exception as exc:
            frame["error"] = describe(exc, filename)
        emit(frame)
    was_timed = bool(run.sets and run.timing_model is not None and job.get("time_reps"))
    if was_timed:
        timed_pass(run, emit)
    # Last, so that nothing it leaves behind can touch another check.
    last = last_step(job, module, launches, run.timing_model if was_timed else None, run.clocked_inputs)
    last["launch_names"] = dict(launches.names)
    emit(last)


def _candidate_trial(run: _Candidate, index: int, trial: dict[str, Any], frame: dict[str, Any]) -> bool:
    """One correctness trial into ``frame`` (False for a timing set: kept for the timed pass)."""
    job, device = run.job, run.job["device"]
    # A set the runner loads while this job is stopped comes as its shapes alone (``clocked``).
    inputs = to_device(trial["inputs"] if "like" not in trial else blank(trial["like"]), device)
    if trial["tag"] == "default" and run.warm is None:
        # The timed pass warms up on these (seen already): every timed set stays new.
        run.warm = [_clone(v) if isinstance(v, _Tensor) else v for v in inputs]
    if trial["tag"] == "timing":
        run.sets.append(inputs)
        run.timing_model = run.timing_model or build(run.module, "ModelNew", trial, device)
        return False
    model = build(run.module, "ModelNew", trial, device)
    # Every correctness trial runs under the same recorder (no call is singled out).
    recorder = run.recorder(model, inputs)
    threads_before = {t.ident for t in threading.enumerate()}
    native_start = guards.threads.native_threads()
    launched = run.launches.count
    seed_all(forward_seed(trial))
    with torch.no_grad(), recorder:
        depth = guards.tamper.dispatch_depth()
        out = model(*inputs)
        if guards.tamper.dispatch_depth() < depth:
            run.evasion.events.append("popped the op recorder off the dispatch stack")
    sync(device)
    structure, outputs, kinds = snapshot_taken(out)
    native_after = guards.threads.native_threads()
    frame.update(unloaded=list(getattr(model, "_kforge_unloaded", [])))
    frame.update(structure=structure, outputs=outputs, kinds=kinds, spans=stored_elements(out), ops=recorder.ops,
                 provenance=recorder.summary(out), launches=run.launches.count - launched,
                 inputs_after=taken(inputs),
                 stray=guards.threads.stray_work(threads_before, run.uid if job.get("unique_uid") else -1),
                 tamper=run.tamper())
    # Native threads that appear on a later call and are still working after it are
    # work left running; the first call may legitimately start torch's own pools, and a
    # later one a pool that then sleeps (OpenMP's team, first needed at a larger size).
    busy = guards.threads.busy_threads(native_after - native_start) \
        if run.later_call and native_after - native_start else []
    if busy:
        frame["stray"]["threads"].append(f"{len(busy)} native thread(s)")
    run.later_call = True
    if index == 0:
        again_inputs = to_device(trial["inputs"], device)
        # Under a recorder like every correctness call, so the rerun looks like any other;
        # its outputs must be this call's kernel writes too (not a result kept from the first).
        rerun = run.recorder(model, again_inputs)
        # the same forward seed only where the reference draws from the generator itself
        seed_all(forward_seed(trial) + (0 if job.get("random_reference") else 1))
        with torch.no_grad(), rerun:
            again = model(*again_inputs)
        sync(device)
        frame["rerun_outputs"] = snapshot_taken(again)[1]
        frame["rerun_provenance"] = rerun.summary(again)
    return True


def _candidate_timed(run: _Candidate, emit: Emit) -> None:
    """The timed pass over the kept sets, then what it watched (``post_timing``)."""
    job, device = run.job, run.job["device"]

    def snapshot(out: Any, into: list[Any] | None = None) -> tuple[str, list[Any]]:
        structure, outs, _ = snapshot_outputs(out, into)
        return structure, outs

    params = list(run.timing_model.parameters()) + list(run.timing_model.buffers())

    def record(model: Any, args: list[Any]) -> provenance.Provenance:
        # What the model holds now (buffers it made on an earlier call included); native
        # writes proven by canaries, as on every correctness call.
        return provenance.Provenance(run.launches, list(args) + params, provenance.reachable_tensors(model, run.module),
                                     canary=True)

    watch = timed.Watch(record, lambda rec, out: rec.summary(out) if rec is not None else {}, snapshot,
                        stored_elements, (lambda out: snapshot_taken(out)[:2]) if send_now is not None else None)
    seeds = [forward_seed(t) for t in job["trials"] if t["tag"] == "timing"]
    if device == "cpu":
        # From here on the process starts no thread, process or program and reads no other's memory.
        guards.syscall_filter.install()
        emit({"kind": "phase", "name": "candidate:syscall_filter"})
    party = timed.Party(run.timing_model, run.sets, "candidate", run.warm if run.warm is not None else run.sets[0],
                        lambda: sync(device), watch, seeds)
    if job.get("clocked"):
        clocked.time_clocked(job, emit, [party])
        # the ablation's inputs: the set the runner loaded last (a replayed one, seen by this instance)
        timing_trials = [t for t in job["trials"] if t["tag"] == "timing"]
        if watch.replayed:
            run.clocked_inputs = ([_clone(v) if isinstance(v, _Tensor) else v for v in party.buffers],
                                  timing_trials[watch.replayed[-1]].get("index"))
    else:
        timed.time_parties(job, emit, [party])
    emit({"kind": "post_timing", "outputs": watch.outputs, "structures": watch.structures, "spans": watch.spans,
          "provenance_reps": watch.provenance, "inputs_changed": watch.inputs_changed, "retained": watch.retained,
          "replayed": watch.replayed, "replay_outputs": watch.replay_outputs,
          "replay_structures": watch.replay_structures, "tamper": run.tamper(), "launches": run.launches.count,
          "launch_names": dict(run.launches.names)})


def ablation(job: dict[str, Any], module: Any, launches: guards.launches.LaunchCounter,
             timed_model: torch.nn.Module | None, seen: tuple[list[Any], int] | None = None) -> dict[str, Any]:
    """Forward once more with every custom kernel skipped: the judge fails the
    candidate if the output is still right. After timing it is the timed
    instance on a copy of a timing set that instance has seen (the first one, or
    ``seen``: the last the runner loaded and its trial's index, where only the
    runner held the sets), so
    results kept by content are found too; otherwise a fresh instance on the first
    default trial."""
    device, filename = job["device"], job["filename"]
    tag = "timing" if timed_model is not None else "default"
    pos, trial = next(((i, t) for i, t in enumerate(job["trials"]) if t["tag"] == tag), (None, None))
    if trial is None:
        return {"kind": "ablation", "index": None}
    seen = seen if timed_model is not None else None
    frame: dict[str, Any] = {"kind": "ablation", "index": seen[1] if seen is not None else trial.get("index", pos)}
    try:
        model = timed_model if timed_model is not None else build(module, "ModelNew", trial, device)
        source = seen[0] if seen is not None else trial["inputs"]
        inputs = to_device([_clone(v) if isinstance(v, _Tensor) else v for v in source], device)
        mode = guards.ablation.Ablation(inputs + list(model.parameters()) + list(model.buffers()))
        launches.ablation = mode
        seed_all(forward_seed(trial))
        try:
            with torch.no_grad(), mode:
                out = model(*inputs)
            sync(device)
        finally:
            launches.ablation = None
        structure, outputs, kinds = snapshot_taken(out)  # the frame's last call: nothing runs before it goes
        frame.update(structure=structure, outputs=outputs, kinds=kinds, skipped=mode.skipped)
    except Exception as exc:
        frame["error"] = describe(exc, filename)
    return frame


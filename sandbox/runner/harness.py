"""What a runner child does with one job: run the reference, or the candidate.

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
from typing import Any

import torch

from . import clocked, compiled, guards, native, provenance, timed, timing
from .loader import LoadError, describe, load_module, signature_of
from .shared import DTYPES
from .timed import flatten_output, seed_all

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


# Set by the runner where large tensors travel beside the frames (runner/shared.py): sends
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
    sets: list[list[Any]] = []
    warm: list[Any] | None = None
    model = timing_model = None
    planned = sum(1 for t in job["trials"] if t["tag"] == "timing")
    cap = planned
    replayed = set(job.get("replayed") or ())  # the judge holds these trials' results from an earlier run
    ran = set(replayed)  # trials that gave outputs (a replayed one did, or it would not be kept)
    # Large by its inputs (the judge read them off get_inputs), else by its first trial's tensors.
    large = True if job.get("large") else None
    checked_random = False
    for index, trial in enumerate(job["trials"]):
        if trial["tag"] == "timing" and len(sets) >= cap or index in replayed:
            continue  # not needed: the judge times the sets that were made
        if trial.get("fallback") and index - 1 in ran:
            continue  # the trial it stands in for ran
        if trial.get("unless_large") and large or trial.get("if_large") and not large:
            emit({"kind": "trial", "index": index, "skipped": "large" if large else "not large"})
            continue
        module.__dict__.update(defaults)
        module.__dict__.update(trial.get("constants") or {})
        first_set = trial["tag"] == "timing" and timing_model is None
        try:
            seed_all(trial["seed"])
            init_inputs = list(module.get_init_inputs())
            trial = {**trial, "init_inputs": init_inputs}
            # The timing sets share one model (one seed): built once.
            model = timing_model if trial["tag"] == "timing" and timing_model is not None \
                else build(module, "Model", trial, device)
            seed_all(trial["input_seed"])
            inputs = to_device(list(module.get_inputs()), device)
            seed_all(forward_seed(trial))
            t0 = timing._perf_ns()
            with torch.no_grad():
                out = model(*inputs)
            sync(device)
            once_s = (timing._perf_ns() - t0) / 1e9
            # Copies to compare a call with another seed against (the first default trial),
            # else taken at once (beside the frames: sent now, one copy into the shared file).
            random_check = trial["tag"] == "default" and not checked_random
            structure, outputs, kinds = snapshot_outputs(out) if random_check else snapshot_taken(out)
            out_bytes = timed.nbytes(flatten_output(out)[1])
        except Exception as exc:
            emit({"kind": "trial", "index": index, "error": describe(exc, job["filename"])})
            continue
        ran.add(index)
        frame: dict[str, Any] = {"kind": "trial", "index": index, "inputs": taken(inputs),
                                 "structure": structure, "outputs": outputs, "kinds": kinds,
                                 "spans": stored_elements(out)}
        if large is None:
            large = timed.nbytes([*inputs, *model.state_dict().values()]) + out_bytes > job.get("large_bytes", 1 << 62)
        if trial["tag"] == "default" and warm is None:
            warm = inputs
        if trial["tag"] == "timing":
            sets.append(inputs)
            if first_set:
                timing_model = model
                set_bytes = timed.nbytes(inputs) + out_bytes
                cap = timed.set_cap(planned, set_bytes, once_s, float(job.get("time_budget_s", 10.0)),
                                    bool(large), job.get("memory_mb"))
        if trial["tag"] != "timing" or first_set:
            # Later timing sets share the first one's model, state and work.
            frame.update(init_inputs=to_cpu(init_inputs),
                         state_dict={k: _clone(_to(v, "cpu")) for k, v in model.state_dict().items()},
                         **record_ops(model, inputs, device))
        if random_check:
            checked_random = True
            frame["random"] = draws_randomly(model, inputs, outputs, forward_seed(trial), device)
        emit(frame)
    module.__dict__.update(defaults)
    if sets and job.get("time_reps") and timing_model is not None:
        warm_inputs = warm if warm is not None else sets[0]
        time_baselines(job, emit, timing_model, sets, warm_inputs, lambda: sync(device))


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


def run_candidate(job: dict[str, Any], emit: Emit) -> None:
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
    module = load_module(job["source"], filename, "kforge_candidate")
    cls = getattr(module, "ModelNew", None)
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        raise LoadError(f"{filename}: defines no `ModelNew` subclass of torch.nn.Module")
    emit({"kind": "loaded", "signature": signature_of(cls), "tamper": guard.changed(), "launches": launches.count})
    uid = os.getuid()
    later_call = False  # the first correctness call may start pools; later ones only idle ones
    sets: list[list[Any]] = []
    warm: list[Any] | None = None
    timing_model = None
    clocked_inputs: tuple[list[Any], int] | None = None
    for index, trial in enumerate(job["trials"]):
        frame: dict[str, Any] = {"kind": "trial", "index": trial.get("index", index)}
        try:
            # A set the runner loads while this job is stopped comes as its shapes alone (``clocked``).
            inputs = to_device(trial["inputs"] if "like" not in trial else blank(trial["like"]), device)
            if trial["tag"] == "default" and warm is None:
                # The timed pass warms up on these (seen already): every timed set stays new.
                warm = [_clone(v) if isinstance(v, _Tensor) else v for v in inputs]
            if trial["tag"] == "timing":
                sets.append(inputs)
                timing_model = timing_model or build(module, "ModelNew", trial, device)
                continue
            model = build(module, "ModelNew", trial, device)
            # Every correctness trial runs under the same recorder (no call is singled out).
            recorder = provenance.Provenance(launches, inputs + list(model.parameters()) + list(model.buffers()),
                                             provenance.reachable_tensors(model, module), canary=True)
            threads_before = {t.ident for t in threading.enumerate()}
            native_start = guards.threads.native_threads()
            launched = launches.count
            seed_all(forward_seed(trial))
            with torch.no_grad(), recorder:
                depth = guards.tamper.dispatch_depth()
                out = model(*inputs)
                if guards.tamper.dispatch_depth() < depth:
                    evasion.events.append("popped the op recorder off the dispatch stack")
            sync(device)
            structure, outputs, kinds = snapshot_taken(out)
            native_after = guards.threads.native_threads()
            frame.update(unloaded=list(getattr(model, "_kforge_unloaded", [])))
            frame.update(structure=structure, outputs=outputs, kinds=kinds, spans=stored_elements(out), ops=recorder.ops,
                         provenance=recorder.summary(out),
                         launches=launches.count - launched,
                         inputs_after=taken(inputs),
                         stray=guards.threads.stray_work(threads_before, uid if job.get("unique_uid") else -1),
                         tamper=guard.changed() + list(dict.fromkeys(evasion.events)))
            # Native threads that appear on a later call and are still working after it are
            # work left running; the first call may legitimately start torch's own pools, and a
            # later one a pool that then sleeps (OpenMP's team, first needed at a larger size).
            busy = guards.threads.busy_threads(native_after - native_start) \
                if later_call and native_after - native_start else []
            if busy:
                frame["stray"]["threads"].append(f"{len(busy)} native thread(s)")
            later_call = True
            if index == 0:
                again_inputs = to_device(trial["inputs"], device)
                # Under a recorder like every correctness call, so the rerun looks like any other;
                # its outputs must be this call's kernel writes too (not a result kept from the first).
                rerun = provenance.Provenance(launches, again_inputs + list(model.parameters()) + list(model.buffers()),
                                              provenance.reachable_tensors(model, module), canary=True)
                # the same forward seed only where the reference draws from the generator itself
                seed_all(forward_seed(trial) + (0 if job.get("random_reference") else 1))
                with torch.no_grad(), rerun:
                    again = model(*again_inputs)
                sync(device)
                frame["rerun_outputs"] = snapshot_taken(again)[1]
                frame["rerun_provenance"] = rerun.summary(again)
        except Exception as exc:
            frame["error"] = describe(exc, filename)
        emit(frame)
    if sets and timing_model is not None and job.get("time_reps"):
        params = list(timing_model.parameters()) + list(timing_model.buffers())

        def record(model: Any, args: list[Any]) -> provenance.Provenance:
            # What the model holds now (buffers it made on an earlier call included); native
            # writes proven by canaries, as on every correctness call.
            return provenance.Provenance(launches, list(args) + params, provenance.reachable_tensors(model, module),
                                         canary=True)

        def snapshot(out: Any, into: list[Any] | None = None) -> tuple[str, list[Any]]:
            structure, outs, _ = snapshot_outputs(out, into)
            return structure, outs

        watch = timed.Watch(record, lambda rec, out: rec.summary(out) if rec is not None else {}, snapshot,
                            stored_elements, (lambda out: snapshot_taken(out)[:2]) if send_now is not None else None)
        seeds = [forward_seed(t) for t in job["trials"] if t["tag"] == "timing"]
        party = timed.Party(timing_model, sets, "candidate", warm if warm is not None else sets[0],
                            lambda: sync(device), watch, seeds)
        if job.get("clocked"):
            clocked.time_clocked(job, emit, [party])
            # the ablation's inputs: the set the runner loaded last (a replayed one, seen by this instance)
            timing_trials = [t for t in job["trials"] if t["tag"] == "timing"]
            if watch.replayed:
                clocked_inputs = ([_clone(v) if isinstance(v, _Tensor) else v for v in party.buffers],
                                  timing_trials[watch.replayed[-1]].get("index"))
        else:
            timed.time_parties(job, emit, [party])
        emit({"kind": "post_timing", "outputs": watch.outputs, "structures": watch.structures, "spans": watch.spans,
              "provenance_reps": watch.provenance, "inputs_changed": watch.inputs_changed,
              "retained": watch.retained,
              "replayed": watch.replayed, "replay_outputs": watch.replay_outputs,
              "replay_structures": watch.replay_structures,
              "tamper": guard.changed() + list(dict.fromkeys(evasion.events)), "launches": launches.count,
              "launch_names": dict(launches.names)})
    # Last, so that nothing it leaves behind can touch another check.
    was_timed = bool(sets and timing_model is not None and job.get("time_reps"))
    last = ablation(job, module, launches, timing_model if was_timed else None, clocked_inputs)
    last["launch_names"] = dict(launches.names)
    emit(last)


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


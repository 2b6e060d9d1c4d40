"""The timed pass over a model: one repetition per input set, each set new to the model.

Every timed repetition runs on inputs the model has never seen (fresh draws
of ``get_inputs``, made by the reference's runner), loaded into the same
buffers before the call, so a result kept by content or by buffer identity is
never the right answer. The candidate's timed calls are plain calls, as the
baselines' are (a recorder on them would add its own cost, ~30 us per torch
op, to the candidate's time only); after each one, out of the timed region,
its whole output is kept for the judge and its inputs are compared with what
was loaded (``Watch``). After the pass, ``REPLAYED_SETS`` of its sets, drawn
then (the candidate cannot know which while it is timed), run again under the
provenance recorder: their provenance is checked and their outputs compared
like the timed ones. What a timed call could do differently from a recorded
one is bounded by those checks: its output is right on inputs never seen, its
inputs untouched, its threads counted over the pass (``cpus_used``) -- it can
only compute, and its time is what that took.

The runner's clock (outside this process) stamps the frames around the timed
pass (after the warm-up) and around the same pass without the calls
(``timing.run_null``); the difference is what the calls took, to corroborate
the reported times.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import torch

from . import timing

Emit = Callable[[dict[str, Any]], None]

_copy = torch.Tensor.copy_
_clone = torch.Tensor.clone
_equal = torch.equal
_Tensor = torch.Tensor

# Memory the timing sets of one problem may take (inputs and outputs, in each
# process that holds them); fewer sets when a call's tensors are large.
TIMING_BYTES = 512 << 20
MIN_SETS = 3
MIN_SETS_LARGE = 2
# Timing sets run again under the recorder after the pass, drawn after it.
REPLAYED_SETS = 3
# RELEASE: a timed call's output is dropped (after its checks, untimed) before
# the next call, for the candidate and the baselines alike. An output still
# held when the next call allocates its own leaves the allocator no freed block
# of that size: glibc then hands out fresh pages, and the call pays a page fault
# per 4 KB it writes (~4 ms per 22 MB output on this project's 2-CPU VM, 5x a
# memory-bound kernel's own time) -- for whichever party happened to hold, and
# not for the other. A model run in a loop reuses its freed output; so does the
# timed pass.
# STORE: the copies of the candidate's timed outputs (kept for the judge) go
# into tensors allocated and touched before the pass, one per set and a spare
# that the null pass copies into: fresh clones would fault their pages in the
# timed pass and not in the null pass, and the outside clock would charge
# those faults to the calls (a false ``timer_corroborated`` reject).


def nbytes(values: list[Any]) -> int:
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, _Tensor))


def set_cap(planned: int, set_bytes: int, once_s: float, budget_s: float, large: bool) -> int:
    """How many of the planned timing sets to make: within the memory for
    timing sets and about the time budget, never fewer than the minimum."""
    floor = min(planned, MIN_SETS_LARGE if large else MIN_SETS)
    by_memory = TIMING_BYTES // max(1, set_bytes)
    by_time = int(budget_s / max(once_s, 1e-6))
    return max(floor, min(planned, by_memory, by_time))


def same_bits(a: Any, b: Any) -> bool:
    """Equal, NaN in the same places included."""
    if not (isinstance(a, _Tensor) and isinstance(b, _Tensor)):
        return True
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if _equal(a, b):
        return True
    if a.dtype.is_floating_point:
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return False


class Watch:
    """The candidate's hooks on the timed pass (see the module docstring).

    ``record(model, args)`` returns a context manager (the recorder) and
    ``summary(recorder, out)`` its provenance summary; ``snapshot(out)`` the
    output's (structure, tensors). ``outputs``/``structures``/``inputs_changed``
    are per timed call; ``replayed`` names the sets run again under the
    recorder, with their ``provenance``, ``replay_outputs`` and ``replay_structures``."""

    def __init__(self, record: Callable[[Any, list[Any]], Any], summary: Callable[[Any, Any], dict[str, Any]],
                 snapshot: Callable[[Any], tuple[str, list[Any]]]) -> None:
        self.record = record
        self.summary = summary
        self.snapshot = snapshot
        self.outputs: list[list[Any]] = []
        self.structures: list[str] = []
        self.provenance: list[dict[str, Any]] = []
        self.inputs_changed: list[int] = []
        self.replayed: list[int] = []
        self.replay_outputs: list[list[Any]] = []
        self.replay_structures: list[str] = []


def emit_timing(job: dict[str, Any], emit: Emit, model: Any, sets: list[list[Any]], label: str,
                warm_inputs: list[Any], sync: Callable[[], None], watch: Watch | None = None) -> list[float]:
    """Time ``model`` over ``sets`` (one repetition each) and emit a ``timing``
    frame; with ``watch``, every repetition is checked and some replayed under
    the recorder (``replay``)."""
    device, budget = job["device"], job.get("time_budget_s", 10.0)
    buffers = [_clone(v) if isinstance(v, _Tensor) else v for v in sets[0]]
    last: list[Any] = [None]
    flush: Callable[[], object] | None = None
    meta: dict[str, Any] = {}
    if device != "cuda":
        cache = timing.CacheFlush()
        flush = cache
        meta = {"cpu_model": timing.cpu_model(), "threads": torch.get_num_threads(), "flush_bytes": cache.bytes}

    def load(values: list[Any]) -> None:
        for buf, src in zip(buffers, values):
            if isinstance(buf, _Tensor) and isinstance(src, _Tensor) and buf.shape == src.shape:
                _copy(buf, src)
        sync()

    def call(i: int) -> None:
        last[0] = model(*buffers)

    store: list[list[Any]] = []  # STORE: where each timed output is copied, touched before the pass

    def check(i: int) -> None:
        if watch is not None:
            sync()
            structure, outs = watch.snapshot(last[0], store[i] if i < len(store) else None)
            watch.structures.append(structure)
            watch.outputs.append(outs)
            note_inputs(watch, i, buffers, sets[i])
        release()

    def release() -> None:
        # Every timed party lets its output go before its next call (``RELEASE``).
        sync()
        last[0] = None

    def warm() -> None:
        load(warm_inputs)
        last[0] = model(*buffers)
        if watch is not None and not store:
            sync()
            store.extend(touched(watch.snapshot(last[0])[1]) for _ in range(len(sets) + 1))
        release()

    def null_check(i: int) -> None:  # the same checks' cost: the last output copied into the spare store
        if watch is not None and watch.outputs:
            watch.snapshot(watch.outputs[-1], store[-1] if store else None)
            all(same_bits(b, s) for b, s in zip(buffers, sets[i]))

    loop = timing.Loop(len(sets), load_set(load, sets), check, warm,
                       start=lambda: emit({"kind": "phase", "name": f"{label}:loop_start"}))
    load_before = timing.load_average()
    with torch.no_grad():
        if device == "cuda":
            times = timing.time_cuda(call, loop, budget)
        else:
            # Triton's interpreter (not a real timing) keeps its single warm-up call.
            warmup = timing.CPU_WARMUP_CALLS if job.get("native_timing") else 1
            times = timing.time_cpu(call, loop, budget, flush, warmup)
        emit({"kind": "phase", "name": f"{label}:loop_end", "reps": len(times)})
        if watch is not None:
            emit({"kind": "phase", "name": f"{label}:null_start"})
            timing.run_null(timing.Loop(len(times), load_set(load, sets), null_check), len(times), device, flush)
            emit({"kind": "phase", "name": f"{label}:null_end"})
    if device != "cuda" and loop.wall_ns:
        meta["cpus_used"] = round(loop.cpu_ns / loop.wall_ns, 3)
        meta["cpus_used_over_ms"] = round(loop.wall_ns / 1e6, 3)
        meta["faults"], meta["preempted"] = loop.faults, loop.preempted
    meta["loadavg"] = [load_before, timing.load_average()]
    emit({"kind": "timing", "name": label, "times_ms": times, "sets": len(sets),
          "label": timing.CUDA_LABEL if device == "cuda" else timing.CPU_LABEL, **meta})
    if watch is not None:
        replay(model, sets[:len(times)], watch, buffers, load, sync)
    return times


def touched(like: list[Any]) -> list[Any]:
    """Tensors shaped like ``like``, every page written once (``STORE``)."""
    return [torch.zeros_like(v) if isinstance(v, _Tensor) else None for v in like]


def load_set(load: Callable[[list[Any]], None], sets: list[list[Any]]) -> Callable[[int], None]:
    return lambda i: load(sets[i])


def replay(model: Any, sets: list[list[Any]], watch: Watch, buffers: list[Any],
           load: Callable[[list[Any]], None], sync: Callable[[], None]) -> None:
    """Runs ``REPLAYED_SETS`` of the timed sets again, drawn now, each under
    the recorder: its provenance, output and inputs go into ``watch``."""
    chosen = sorted(random.SystemRandom().sample(range(len(sets)), min(REPLAYED_SETS, len(sets))))
    with torch.no_grad():
        for i in chosen:
            load(sets[i])
            recorder = watch.record(model, buffers)
            with recorder:
                out = model(*buffers)
            sync()
            structure, outs = watch.snapshot(out)
            watch.replayed.append(i)
            watch.replay_structures.append(structure)
            watch.replay_outputs.append(outs)
            watch.provenance.append(watch.summary(recorder, out))
            note_inputs(watch, i, buffers, sets[i])


def note_inputs(watch: Watch, i: int, buffers: list[Any], loaded: list[Any]) -> None:
    """Set ``i`` among ``inputs_changed`` (once) if a call left its inputs other than loaded."""
    if not all(same_bits(b, s) for b, s in zip(buffers, loaded)) and i not in watch.inputs_changed:
        watch.inputs_changed.append(i)

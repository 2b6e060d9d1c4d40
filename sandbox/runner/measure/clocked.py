"""A timed pass clocked by the runner (native kernels on the CPU): the job's side.

The runner's side, and why, is ``clocking``. Here a job that parked after its
warm-up asks for each set by a "want" frame and stops; the runner writes the set
into the party's input buffers, flushes the cache, reads its clock and continues
the job, which calls the model at once, writes where its output lies into
``DESCRIBED`` (a few integers in its own memory, no frame: nothing but the call
and this runs on the clock) and stops again. The runner's clock then reads the
call's end, and it copies the output and the inputs out of the stopped process.
What the job does between the two stops is the call; what it does after the
second (its output let go, the next set asked for) can no longer change what the
runner read.

The times this process measures itself go in the timing frame as before
(``inside_ms`` once the judge has the runner's); the judge's times are the runner's.
Each call's own reading is also written into ``OWN_NS`` before the stop after it,
where the runner reads it with the output: a record rewritten by a later call (the
harness's list reached from the candidate's frames) then differs from the copy the
runner took, whatever the host's load.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import torch

from ..channel.shared import DTYPES
from . import timed, timing

Emit = Callable[[dict[str, Any]], None]

_stop = timing.stop_here
_perf = timing._perf_ns
_usage, _SELF = timing._usage, timing._SELF
_Tensor = torch.Tensor
_no_grad = torch.no_grad

# Where a clocked call's output lies, as int64s: [structure, count] and per item
# [address, dtype, ndim, span bytes, shape * MAX_DIMS, stride * MAX_DIMS].
MAX_ITEMS = 16
MAX_DIMS = 8
ITEM = 4 + 2 * MAX_DIMS
STRUCTURES = {"tensor": 0, "tuple": 1, "list": 2}
DTYPE_CODES = {dtype: code for code, dtype in enumerate(DTYPES.values())}
NOT_A_TENSOR = -1
UNDESCRIBED = -1  # structure: more items than MAX_ITEMS
DESCRIBED = (ctypes.c_int64 * (2 + MAX_ITEMS * ITEM))()
# This process's own reading of the call just made, in ns, written before the stop after it.
OWN_NS = (ctypes.c_int64 * 1)()


def describe(out: Any, into: Any = DESCRIBED) -> None:
    """Writes where ``out``'s tensors lie into ``into`` (see DESCRIBED); an item the runner
    cannot copy (not a CPU strided tensor of a known dtype, a negative stride, more than
    MAX_DIMS dims) is written as NOT_A_TENSOR."""
    if isinstance(out, (tuple, list)):
        into[0], items = STRUCTURES["tuple" if isinstance(out, tuple) else "list"], out
    else:
        into[0], items = STRUCTURES["tensor"], (out,)
    if len(items) > MAX_ITEMS:
        into[0] = UNDESCRIBED
        return
    into[1] = len(items)
    at = 2
    for v in items:
        code = DTYPE_CODES.get(v.dtype, NOT_A_TENSOR) if isinstance(v, _Tensor) else NOT_A_TENSOR
        if code != NOT_A_TENSOR and (v.device.type != "cpu" or v.layout != torch.strided or v.dim() > MAX_DIMS):
            code = NOT_A_TENSOR
        into[at + 1] = code
        if code != NOT_A_TENSOR:
            shape, stride = v.shape, v.stride()
            span = 1 + sum((n - 1) * s for n, s in zip(shape, stride)) if v.numel() else 0
            if any(s < 0 for s in stride):
                into[at + 1] = NOT_A_TENSOR
            into[at], into[at + 2], into[at + 3] = v.data_ptr(), len(shape), span * v.element_size()
            for k, n in enumerate(shape):
                into[at + 4 + k] = n
            for k, s in enumerate(stride):
                into[at + 4 + MAX_DIMS + k] = s
        at += ITEM


def addresses(buffers: list[Any]) -> list[list[int] | None]:
    """Where each input buffer lies, [address, bytes]; None for what is not a CPU tensor."""
    return [[v.data_ptr(), v.numel() * v.element_size()]
            if isinstance(v, _Tensor) and v.device.type == "cpu" and v.is_contiguous() else None for v in buffers]


def request(party: timed.Party, i: int, emit: Emit, clock: bool) -> None:
    """Set ``i`` into the party's buffers, by the runner, while this job is stopped; with
    ``clock`` the runner's clock runs from the moment the job continues."""
    if party.seeds is not None:
        timed.seed_all(party.seeds[i])
    emit({"kind": "want", "party": party.label, "set": i, "inputs": addresses(party.buffers), "clock": clock,
          "described": ctypes.addressof(DESCRIBED), "own": ctypes.addressof(OWN_NS),
          "described_items": MAX_ITEMS, "described_dims": MAX_DIMS})
    _stop()


def clocked_call(party: timed.Party, i: int, emit: Emit, loop: timing.Loop | None = None) -> float:
    """One call on set ``i`` between the runner's readings of its clock; this process's own
    reading of it, in ms; ``loop`` notes its faults and preemptions (a diagnosis)."""
    request(party, i, emit, clock=True)
    u0 = _usage(_SELF)
    t0 = _perf()
    out = party.model(*party.buffers)
    t1 = _perf()
    u1 = _usage(_SELF)
    describe(out)
    OWN_NS[0] = t1 - t0
    _stop()
    party.last[0] = out
    del out
    if loop is not None:
        loop.note_usage(u0, u1)
    party.settle(i)
    return (t1 - t0) / 1e6


def time_clocked(job: dict[str, Any], emit: Emit, parties: list[timed.Party],
                 first: Callable[[], object] | None = None) -> list[list[float]]:
    """The parties' timed pass, every call clocked by the runner, set by set; then the
    replayed sets (``timed.replay``), loaded by the runner too. ``first`` runs once the
    warm-ups are done (a compiled baseline's cache packed), before the first set."""
    loops = [p.loop(emit) for p in parties]
    load_before = timing.load_average()
    sets = min(len(p.sets) for p in parties)
    with _no_grad():
        timing.warm_up(loops, timing.CPU_WARMUP_CALLS)
        if first is not None:
            first()
        times: list[list[float]] = [[] for _ in parties]
        for p in parties:
            emit({"kind": "phase", "name": f"{p.label}:loop_start"})
        for i in range(sets):
            for p, loop, got in zip(parties, loops, times):
                got.append(clocked_call(p, i, emit, loop))
        for p, got in zip(parties, times):
            emit({"kind": "phase", "name": f"{p.label}:loop_end", "reps": len(got)})
            if p.watch is not None:
                p.watch.retained = p.retained()
    meta = {"cpu_model": timing.cpu_model(), "threads": torch.get_num_threads(), "flush_bytes": timing.flush_bytes(),
            "loadavg": [load_before, timing.load_average()], "allocator": timing.allocator()}
    for p, loop, got in zip(parties, loops, times):
        emit({"kind": "timing", "name": p.label, "times_ms": got, "sets": len(p.sets), "label": timing.CPU_LABEL,
              "clocked": True, "interleaved": bool(job.get("interleaved", True)),
              "faults": loop.faults, "preempted": loop.preempted, **meta})
    for p, got in zip(parties, times):
        if p.watch is not None:
            timed.replay(p.model, p.sets[:len(got)], p.watch, p.buffers,
                         lambda i, p=p: request(p, i, emit, clock=False), p.sync, check_inputs=False)
    return times


class _Idle:
    """The calibration's model: returns the same small tensor, computing nothing."""

    def __init__(self) -> None:
        self.out = torch.zeros(1)

    def __call__(self, *_: Any) -> torch.Tensor:
        return self.out


def calibration(emit: Emit, calls: int) -> None:
    """Run by a child of the runner that runs no untrusted code (``clocking.Clock.calibrate``):
    ``calls`` clocked calls that do nothing, on the path every clocked call takes."""
    party = timed.Party(_Idle(), [[]], "calibration", [], lambda: None)
    for _ in range(calls):
        clocked_call(party, 0, emit)

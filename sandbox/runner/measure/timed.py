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

import gc
import random
from collections.abc import Callable
from typing import Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from . import timing

Emit = Callable[[dict[str, Any]], None]

_copy = torch.Tensor.copy_
_clone = torch.Tensor.clone
_collect = gc.collect
_equal = torch.equal
_Tensor = torch.Tensor
_manual_seed = torch.manual_seed


def seed_all(seed: int) -> None:
    random.seed(seed)
    _manual_seed(seed)

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
# FRESH: each timed call's output must be memory no earlier call returned and that nothing
# in the candidate's process holds once the judge lets it go: an output kept (a ring, a
# stock made in the warm-up, a pool it is given back to, a view or a storage object kept)
# and returned again skips the allocation and page faults every baseline pays, and in a
# user's program overwrites the result of the call before. After the pass, weak handles on
# every timed output's storage say whether something still holds one (its inputs' and the
# model's own storages excepted: an output that is a view of them is judged elsewhere).
# STORE: the copies of the candidate's timed outputs (kept for the judge) go
# into tensors allocated and touched before the pass, one per set and a spare
# that the null pass copies into: fresh clones would fault their pages in the
# timed pass and not in the null pass, and the outside clock would charge
# those faults to the calls (a false ``timer_corroborated`` reject). Copies made
# straight into sealed memory files instead (measured at 1 GB a call) saved the
# touching but allocated in both passes, and a pass's allocations swing by
# more than a call takes: one false reject in seven runs. The replayed sets,
# after the clock, are sent at once (``Watch.taken``).


def flatten_output(out: Any) -> tuple[str, list[Any]]:
    """('tensor', [t]) or ('tuple[n]', [...]); non-tensors are kept as type names."""
    if isinstance(out, (tuple, list)):
        items = list(out)
        return f"{type(out).__name__}[{len(items)}]", items
    return "tensor", [out]


def nbytes(values: list[Any]) -> int:
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, _Tensor))


def timing_bytes(memory_mb: float | None) -> int:
    """The memory for a job's timing sets: TIMING_BYTES, or a quarter of the job's
    memory limit where that is less. The sets share the limit with the cache flush's
    buffers, the outputs, the checks' temporaries and torch's pages copied on write:
    a tuning pass with 8 sets of 64 MB under a 768 MB limit peaked 25-55 MB below
    it, and was killed when a busier machine pushed it over."""
    return min(TIMING_BYTES, (int(memory_mb) << 20) // 4) if memory_mb else TIMING_BYTES


def set_cap(planned: int, set_bytes: int, once_s: float, budget_s: float, large: bool,
            memory_mb: float | None = None) -> int:
    """How many of the planned timing sets to make: within the memory for
    timing sets and about the time budget, never fewer than the minimum."""
    floor = min(planned, MIN_SETS_LARGE if large else MIN_SETS)
    by_memory = timing_bytes(memory_mb) // max(1, set_bytes)
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
    output's (structure, tensors); ``layout(out)`` what ``spans`` keeps of each
    call's outputs (how many elements their memory holds).
    ``outputs``/``structures``/``spans``/``inputs_changed`` are per timed call; ``replayed`` names the sets run again under the
    recorder, with their ``provenance``, ``replay_outputs`` and ``replay_structures``."""

    def __init__(self, record: Callable[[Any, list[Any]], Any], summary: Callable[[Any, Any], dict[str, Any]],
                 snapshot: Callable[[Any], tuple[str, list[Any]]],
                 layout: Callable[[Any], list[Any]] | None = None,
                 taken: Callable[[Any], tuple[str, list[Any]]] | None = None) -> None:
        self.record = record
        self.summary = summary
        self.snapshot = snapshot
        self.layout = layout
        # ``taken(out)``: the outputs sent at once, one copy each (``harness.taken``; the replayed sets)
        self.taken = taken
        self.spans: list[list[Any]] = []
        self.outputs: list[list[Any]] = []
        self.structures: list[str] = []
        self.provenance: list[dict[str, Any]] = []
        self.inputs_changed: list[int] = []
        # timed calls whose output's memory something in the candidate's process still held
        # after the judge let it go (``Party.check``; FRESH)
        self.retained: list[int] = []
        self.replayed: list[int] = []
        self.replay_outputs: list[list[Any]] = []
        self.replay_structures: list[str] = []


class Party:
    """One model timed in a pass: its input buffers (each set is loaded into
    them), its last output (``RELEASE``), the store for its timed outputs
    (``STORE``) and, with ``watch``, the checks of every timed call."""

    def __init__(self, model: Any, sets: list[list[Any]], label: str, warm_inputs: list[Any],
                 sync: Callable[[], None], watch: Watch | None = None, seeds: list[int] | None = None,
                 buffers: list[Any] | None = None) -> None:
        self.model, self.sets, self.label, self.warm_inputs = model, sets, label, warm_inputs
        self.sync, self.watch = sync, watch
        # Set i's forward seed, set with its inputs (untimed): a random op in forward (dropout in
        # training mode) draws what the reference drew on that set.
        self.seeds = seeds
        # ``buffers``: another party's (the tuning pass's parties share one set of buffers)
        self.buffers = buffers if buffers is not None else [_clone(v) if isinstance(v, _Tensor) else v for v in sets[0]]
        self.last: list[Any] = [None]
        self.store: list[list[Any]] = []
        self.emit: Emit | None = None  # set by ``loop``: the warm-up's phases
        self.warming = False
        self.null_source: list[Any] | None = None  # on CUDA, the last output back on the device (null pass)
        # FRESH: the storages a call may legitimately return (its inputs', the model's state),
        # and a weak handle on every other output storage of a timed call
        state = [*model.parameters(), *model.buffers()] if isinstance(model, torch.nn.Module) else []
        self.known = {v.untyped_storage()._cdata for v in [*self.buffers, *state] if isinstance(v, _Tensor)}
        self.handed: list[tuple[int, StorageWeakRef]] = []

    def load(self, values: list[Any]) -> None:
        for buf, src in zip(self.buffers, values):
            if isinstance(buf, _Tensor) and isinstance(src, _Tensor) and buf.shape == src.shape:
                _copy(buf, src)
        self.sync()

    def prepare(self, i: int) -> None:
        """Set ``i`` into the buffers, and its forward seed into the generators."""
        self.load(self.sets[i])
        if self.seeds is not None:
            seed_all(self.seeds[i])

    def call(self, i: int) -> None:
        self.last[0] = self.model(*self.buffers)

    def check(self, i: int) -> None:
        watch = self.watch
        if watch is not None:
            self.sync()
            structure, outs = watch.snapshot(self.last[0], self.store[i] if i < len(self.store) else None)
            watch.structures.append(structure)
            watch.outputs.append(outs)
            if watch.layout is not None:
                watch.spans.append(watch.layout(self.last[0]))
            note_inputs(watch, i, self.buffers, self.sets[i])
            self.handed += [(i, w) for w in weak_outputs(self.last[0], self.known)]
        self.release()

    def settle(self, i: int) -> None:
        """After a call clocked by the runner (``clocked``), which copied its output and
        inputs out of this process: the output's structure and layout noted, a weak handle
        kept on its storages (FRESH), the output let go (RELEASE)."""
        watch = self.watch
        if watch is not None:
            watch.structures.append(flatten_output(self.last[0])[0])
            if watch.layout is not None:
                watch.spans.append(watch.layout(self.last[0]))
            self.handed += [(i, w) for w in weak_outputs(self.last[0], self.known)]
        self.release()

    def retained(self) -> list[int]:
        """The timed calls whose output's memory is still held by something, now that the
        judge has let every one go (FRESH). Asked once after the pass: a cycle of garbage
        is collected first, so only a live reference keeps an output."""
        _collect()
        found = sorted({i for i, w in self.handed if not w.expired()})
        self.handed = []
        return found

    def release(self) -> None:
        # Every timed party lets its output go before its next call (``RELEASE``).
        self.sync()
        self.last[0] = None

    def warm(self) -> None:
        if self.emit is not None and not self.warming:
            self.warming = True
            self.emit({"kind": "phase", "name": f"{self.label}:warm_start"})
        self.load(self.warm_inputs)
        self.last[0] = self.model(*self.buffers)
        if self.watch is not None and not self.store:
            self.sync()
            like = flatten_output(self.last[0])[1]
            self.store.extend(touched(like) for _ in range(len(self.sets) + 1))
        self.release()

    def null_check(self, i: int) -> None:  # the same checks' cost: the last output copied into the spare store
        watch = self.watch
        if watch is not None and watch.outputs:
            source = self.null_source if self.null_source is not None else watch.outputs[-1]
            watch.snapshot(source, self.store[-1] if self.store else None)
            all(same_bits(b, s) for b, s in zip(self.buffers, self.sets[i]))

    def loop(self, emit: Emit) -> timing.Loop:
        """The pass's hooks; the runner stamps the warm-up's start and end (for a
        torch.compile baseline, its compilation) and the timed loop's start."""
        self.emit = emit
        return timing.Loop(len(self.sets), self.prepare, self.check, self.warm,
                           start=lambda: emit({"kind": "phase", "name": f"{self.label}:loop_start"}),
                           warmed=lambda: emit({"kind": "phase", "name": f"{self.label}:warm_end"}),
                           mark=marks(emit, self.label))


def emit_timing(job: dict[str, Any], emit: Emit, model: Any, sets: list[list[Any]], label: str,
                warm_inputs: list[Any], sync: Callable[[], None], watch: Watch | None = None,
                seeds: list[int] | None = None) -> list[float]:
    """Time ``model`` over ``sets`` (one repetition each) and emit a ``timing``
    frame; with ``watch``, every repetition is checked and some replayed under
    the recorder (``replay``)."""
    return time_parties(job, emit, [Party(model, sets, label, warm_inputs, sync, watch, seeds)])[0]


def time_parties(job: dict[str, Any], emit: Emit, parties: list[Party]) -> list[list[float]]:
    """One timed pass over the parties' sets, set by set (every party's call on
    a set before the next set), a ``timing`` frame per party (a pass clocked by
    the runner is ``clocked.time_clocked``)."""
    device, budget = job["device"], job.get("time_budget_s", 10.0)
    flush: Callable[[], object] | None = None
    meta: dict[str, Any] = {"allocator": timing.allocator()}
    if device != "cuda":
        cache = timing.CacheFlush()
        flush = cache
        meta.update(cpu_model=timing.cpu_model(), threads=torch.get_num_threads(), flush_bytes=cache.bytes)
    loops = [p.loop(emit) for p in parties]
    load_before = timing.load_average()
    with torch.no_grad():
        if device == "cuda":
            timed = [timing.time_cuda(p.call, loop, budget) for p, loop in zip(parties, loops)]
        else:
            # Triton's interpreter (not a real timing) keeps its single warm-up call.
            warmup = timing.CPU_WARMUP_CALLS if job.get("native_timing") else 1
            timed = timing.time_cpu_parties([(p.call, loop) for p, loop in zip(parties, loops)], budget, flush,
                                            warmup)
        for p, times in zip(parties, timed):
            emit({"kind": "phase", "name": f"{p.label}:loop_end", "reps": len(times)})
        for p in parties:
            if p.watch is not None:
                p.watch.retained = p.retained()
        nulls: dict[str, timing.Loop] = {}
        for p, times in zip(parties, timed):
            if p.watch is not None:
                reps = min(len(times), int(job.get("null_reps") or len(times)))
                if device == "cuda":  # the null checks copy a device output to the host, as the timed ones do
                    p.null_source = [v.to("cuda") if isinstance(v, _Tensor) else v for v in p.watch.outputs[-1]]
                nulls[p.label] = timing.Loop(reps, p.prepare, p.null_check, mark=marks(emit, p.label, "null_"))
                emit({"kind": "phase", "name": f"{p.label}:null_start"})
                timing.run_null(nulls[p.label], reps, device, flush)
                emit({"kind": "phase", "name": f"{p.label}:null_end"})
                p.null_source = None
    load_after = timing.load_average()
    for p, loop, times in zip(parties, loops, timed):
        extra: dict[str, Any] = {}
        if device != "cuda" and loop.wall_ns:
            extra["cpus_used"] = round(loop.cpu_ns / loop.wall_ns, 3)
            extra["cpus_used_over_ms"] = round(loop.wall_ns / 1e6, 3)
            extra["faults"], extra["preempted"] = loop.faults, loop.preempted
            extra["flush_rewritten"] = flush.rewritten if isinstance(flush, timing.CacheFlush) else 0
        if loop.host:
            extra["host_ms"] = {"timed": host_medians(loop.host)}
            if p.label in nulls:
                extra["host_ms"]["null"] = host_medians(nulls[p.label].host)
        extra["loadavg"] = [load_before, load_after]
        if device == "cuda":  # the outside clock's window (timing.time_cuda)
            extra["clocked_from"] = loop.clocked_from
        emit({"kind": "timing", "name": p.label, "times_ms": times, "sets": len(p.sets),
              "label": timing.CUDA_LABEL if device == "cuda" else timing.CPU_LABEL, **meta, **extra})
    for p, times in zip(parties, timed):
        if p.watch is not None:
            replay(p.model, p.sets[:len(times)], p.watch, p.buffers, p.prepare, p.sync)
    return timed


def weak_outputs(out: Any, known: set[int]) -> list[StorageWeakRef]:
    """Weak handles on the storages of ``out``'s tensors, but those in ``known``."""
    return [StorageWeakRef(v.untyped_storage()) for v in flatten_output(out)[1]
            if isinstance(v, _Tensor) and v.untyped_storage()._cdata not in known]


def marks(emit: Emit, label: str, prefix: str = "") -> Callable[[str], None]:
    """A pass's repetition marks (``timing.cuda_rep``) as phase frames; the null pass's
    named apart (``prefix``)."""
    return lambda what: emit({"kind": "phase", "name": f"{label}:{prefix}{what}"})


def host_medians(host: list[tuple[int, int, int]]) -> dict[str, float]:
    """Medians of a pass's per-repetition host times (``Loop.host``), in ms, and its slowest
    repetition whole (a cost paid once shows there, not in the medians)."""
    columns = list(zip(*host))
    found = {name: round(sorted(c)[len(c) // 2] / 1e6, 4) for name, c in zip(("load", "rep", "check"), columns)}
    slowest = max(range(len(host)), key=lambda i: sum(host[i]))
    found["slowest"] = round(sum(host[slowest]) / 1e6, 4)
    found["slowest_at"] = slowest  # which repetition, and its load / rep / check
    found["slowest_parts"] = [round(v / 1e6, 4) for v in host[slowest]]
    return found


def touched(like: list[Any]) -> list[Any]:
    """CPU tensors shaped like the outputs ``like`` (no copy of them taken), every page
    written once (``STORE``); None where ``snapshot`` keeps no copy (not a plain tensor)."""
    return [torch.zeros(v.shape, dtype=v.dtype) if type(v) is _Tensor else None for v in like]


def load_set(load: Callable[[list[Any]], None], sets: list[list[Any]]) -> Callable[[int], None]:
    return lambda i: load(sets[i])


def replay(model: Any, sets: list[list[Any]], watch: Watch, buffers: list[Any],
           prepare: Callable[[int], None], sync: Callable[[], None], check_inputs: bool = True) -> None:
    """Runs ``REPLAYED_SETS`` of the timed sets again, drawn now, each under
    the recorder: its provenance, output and (with ``check_inputs``: the sets are
    here, not only in the runner) inputs go into ``watch``."""
    chosen = sorted(random.SystemRandom().sample(range(len(sets)), min(REPLAYED_SETS, len(sets))))
    with torch.no_grad():
        for i in chosen:
            prepare(i)
            recorder = watch.record(model, buffers)
            with recorder:
                out = model(*buffers)
            sync()
            structure, outs = (watch.taken or watch.snapshot)(out)
            watch.replayed.append(i)
            watch.replay_structures.append(structure)
            watch.replay_outputs.append(outs)
            watch.provenance.append(watch.summary(recorder, out))
            if check_inputs:
                note_inputs(watch, i, buffers, sets[i])


def note_inputs(watch: Watch, i: int, buffers: list[Any], loaded: list[Any]) -> None:
    """Set ``i`` among ``inputs_changed`` (once) if a call left its inputs other than loaded."""
    if not all(same_bits(b, s) for b, s in zip(buffers, loaded)) and i not in watch.inputs_changed:
        watch.inputs_changed.append(i)

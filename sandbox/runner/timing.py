"""Timing of a forward call inside a runner child.

On CUDA: CUDA events around each repetition, the L2 cache flushed before each
one, and a device-wide synchronisation before the end event is recorded, so
work the candidate pushed to other streams is inside the measurement. On the
CPU: a host clock, and the numbers say nothing about GPU speed (Triton runs in
its interpreter there).

The functions used are bound at import time, before any untrusted code loads,
so a candidate that patches ``torch.cuda.Event`` or ``time.perf_counter``
afterwards does not change what is measured here (and the tamper guard names
the patch).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

_perf_ns = time.perf_counter_ns
_cuda_sync = torch.cuda.synchronize
_Event = torch.cuda.Event
_elapsed = torch.cuda.Event.elapsed_time
_record = torch.cuda.Event.record

L2_FLUSH_BYTES = 256 << 20
CPU_LABEL = "cpu: host clock over eager torch / Triton interpreter; says nothing about GPU speed"
CUDA_LABEL = "cuda: device time (events, L2 flushed, device-wide sync)"


Hook = Callable[[int], object] | None


def time_cpu(fn: Callable[[int], object], reps: int, budget_s: float, after: Hook = None) -> list[float]:
    """Milliseconds per call; ``fn(i)`` runs repetition ``i``, ``after(i)`` runs untimed."""
    fn(0)  # warm-up
    times: list[float] = []
    deadline = _perf_ns() + int(budget_s * 1e9)
    for i in range(reps):
        t0 = _perf_ns()
        fn(i)
        times.append((_perf_ns() - t0) / 1e6)
        if after is not None:
            after(i)
        if _perf_ns() > deadline and len(times) >= 3:
            break
    return times


def time_cuda(fn: Callable[[int], object], reps: int, budget_s: float, after: Hook = None,
              warmup: int = 5) -> list[float]:
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device="cuda")
    for i in range(warmup):
        fn(i)
    _cuda_sync()
    times: list[float] = []
    deadline = _perf_ns() + int(budget_s * 1e9)
    for i in range(reps):
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        flush.zero_()
        _cuda_sync()
        _record(start)
        fn(i)
        _cuda_sync()  # every stream, not only the current one
        _record(end)
        _cuda_sync()
        times.append(float(_elapsed(start, end)))
        if after is not None:
            after(i)
        if _perf_ns() > deadline and len(times) >= 10:
            break
    return times


def run_plain(fn: Callable[[int], object], reps: int, device: str) -> None:
    """Calls with a sync after each and no clock inside: the runner's clock,
    outside this process, times this phase to corroborate the device timings."""
    for i in range(reps):
        fn(i)
        if device == "cuda":
            _cuda_sync()

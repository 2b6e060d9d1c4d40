"""Timing of a forward call inside a runner child.

On CUDA: CUDA events around each repetition, the L2 cache flushed before each
one, and a device-wide synchronisation before the end event is recorded, so
work the candidate pushed to other streams is inside the measurement.

On the CPU: the host's monotonic wall clock around each call (so every thread
the call starts is inside it: OpenMP regions join before the call returns, and
work left running after it is what no_stray_work catches), warm-up calls
first, the last-level cache flushed before every repetition (a buffer twice
its size, read from sysfs, is written outside the timed region), as many
repetitions as the budget allows, and the same thread count for the candidate
and the baselines: the CPUs the sandbox grants (``grant_threads``). For a
native candidate those numbers are real; for Triton on the CPU (its
interpreter) they say nothing about speed and the judge reports no speedup.

The functions used are bound at import time, before any untrusted code loads,
so a candidate that patches ``torch.cuda.Event`` or ``time.perf_counter``
afterwards does not change what is measured here (and the tamper guard names
the patch).
"""

from __future__ import annotations

import glob
import os
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


CPU_MIN_REPS = 5
CPU_WARMUP_CALLS = 3
FALLBACK_LLC_BYTES = 32 << 20


def llc_bytes() -> int:
    """Size of the largest (last-level) cache CPU 0 sees, from sysfs."""
    best = (0, 0)
    for index in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*"):
        try:
            with open(f"{index}/level") as f:
                level = int(f.read())
            with open(f"{index}/size") as f:
                text = f.read().strip().upper()
        except (OSError, ValueError):
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        try:
            size = int(text.rstrip("KMG")) * scale
        except ValueError:
            continue
        best = max(best, (level, size))
    return best[1] or FALLBACK_LLC_BYTES


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return os.uname().machine


def granted_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def grant_threads(wanted: int | None = None) -> int:
    """Every CPU the sandbox grants (or ``wanted`` of them, if fewer), to torch
    and to OpenMP alike: set in a child before the candidate (or reference)
    loads, so the candidate and the baselines run with the same thread count."""
    n = granted_cpus() if not wanted else max(1, min(int(wanted), granted_cpus()))
    os.environ["OMP_NUM_THREADS"] = str(n)
    torch.set_num_threads(n)
    # Start torch's pool now (an op large enough to run in parallel): a pool
    # that appears first during a later trial would look like work left running.
    torch.ones(1 << 20).add_(1)
    return n


class CacheFlush:
    """Writes a buffer twice the last-level cache, so that no repetition
    finds its inputs or weights left in cache by the one before."""

    def __init__(self) -> None:
        self.bytes = 2 * llc_bytes()
        self._buf = torch.zeros(self.bytes, dtype=torch.uint8)

    def __call__(self) -> None:
        self._buf.add_(1)


def time_cpu(fn: Callable[[int], object], reps: int, budget_s: float, after: Hook = None,
             flush: Callable[[], object] | None = None, warmup: int = CPU_WARMUP_CALLS) -> list[float]:
    """Milliseconds per call; ``fn(i)`` runs repetition ``i``, ``after(i)`` and
    ``flush()`` run untimed. Warm-up calls first; then up to ``reps``
    repetitions, fewer if the budget runs out (never fewer than CPU_MIN_REPS)."""
    deadline = _perf_ns() + int(budget_s * 1e9)
    for _ in range(warmup):  # warm-up (first-call costs, OpenMP pool start)
        fn(0)
    times: list[float] = []
    for i in range(reps):
        if flush is not None:
            flush()
        t0 = _perf_ns()
        fn(i)
        times.append((_perf_ns() - t0) / 1e6)
        if after is not None:
            after(i)
        if _perf_ns() > deadline and len(times) >= CPU_MIN_REPS:
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

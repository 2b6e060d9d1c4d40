"""The machine's ceilings: how fast its memory moves bytes and its cores multiply (issue 56).

A speedup is a ratio to a baseline that can itself be slow; a fraction of what the
hardware can do cannot be inflated that way, and a time faster than the hardware
allows shows the timing was fooled. Measured once per machine and kept (JSON beside
the baseline cache, keyed by CPU model, threads, torch version), with the threads the
judge grants a job:

- memory bandwidth in GB/s over arrays well past the last-level cache
  (``ARRAY_BYTES`` each): ``read`` (a dot of an array with itself), ``write`` (a fill), ``copy`` (bytes read
  plus bytes written) and ``triad`` (a = b + s*c: two read, one written), counted as
  STREAM counts them (the write-allocate read is not counted);
- peak compute in GFLOP/s: a float32 GEMM (``GEMM_N`` square) through torch, the BLAS
  the eager and torch.compile baselines use.

Each is the best of ``REPS`` runs (a ceiling), with the median and the spread
((best - worst) / median) beside it. Only trusted code runs here: torch's own ops on
arrays this module makes; no reference or candidate.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from .baseline_cache import cache_dir

ARRAY_BYTES = 256 << 20
GEMM_N = 2048
REPS = 11
FILE = "ceilings.json"


def machine_key(threads: int, device: str = "cpu") -> dict[str, Any]:
    """What a measurement holds for: the CPU model, the threads, torch's version."""
    import torch

    from .runner.measure.timing import cpu_model

    return {"device": device, "cpu_model": cpu_model(), "threads": int(threads), "torch": str(torch.__version__)}


def _runs(fn: Callable[[], Any], reps: int) -> list[float]:
    fn()  # pages faulted in, the pool awake
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _rate(work: float, seconds: list[float]) -> dict[str, float]:
    rates = sorted(work / s for s in seconds if s > 0)
    median = statistics.median(rates)
    return {"best": round(rates[-1], 2), "median": round(median, 2),
            "spread": round((rates[-1] - rates[0]) / median, 4) if median else 0.0}


def _bandwidth(array_bytes: int, reps: int) -> dict[str, dict[str, float]]:
    import torch

    n = array_bytes // 4
    a, b, c = torch.empty(n), torch.ones(n), torch.full((n,), 2.0)
    gb = array_bytes / 1e9
    return {
        "read": _rate(gb, _runs(lambda: torch.dot(b, b), reps)),  # BLAS sdot: b read once (a sum varied 17% across runs)
        "write": _rate(gb, _runs(lambda: a.fill_(1.5), reps)),
        "copy": _rate(2 * gb, _runs(lambda: a.copy_(b), reps)),
        "triad": _rate(3 * gb, _runs(lambda: torch.add(b, c, alpha=3.0, out=a), reps)),
    }


def measure_cpu(threads: int, array_bytes: int | None = None, gemm_n: int | None = None,
                reps: int | None = None) -> dict[str, Any]:
    """The ceilings of this CPU with ``threads`` threads (the module docstring)."""
    import torch

    array_bytes, gemm_n, reps = array_bytes or ARRAY_BYTES, gemm_n or GEMM_N, reps or REPS

    before = torch.get_num_threads()
    torch.set_num_threads(max(1, int(threads)))
    started = time.perf_counter()
    try:
        bandwidth = _bandwidth(array_bytes, reps)
        x, y = torch.randn(gemm_n, gemm_n), torch.randn(gemm_n, gemm_n)
        out = torch.empty(gemm_n, gemm_n)
        gemm = _rate(2.0 * gemm_n ** 3 / 1e9, _runs(lambda: torch.mm(x, y, out=out), reps))
    finally:
        torch.set_num_threads(before)
    return {"bandwidth_gbs": bandwidth, "gemm_fp32_gflops": gemm,
            "method": {"array_bytes": array_bytes, "gemm_n": gemm_n, "reps": reps},
            "seconds": round(time.perf_counter() - started, 2), "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                              time.gmtime())}


def _path() -> str:
    return os.path.join(cache_dir(), FILE)


def _load() -> list[dict[str, Any]]:
    try:
        with open(_path(), encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, list) else []
    except (OSError, ValueError):
        return []


def kept(threads: int, device: str = "cpu") -> dict[str, Any] | None:
    """The ceilings measured before for this machine and thread count, if any."""
    want = machine_key(threads, device)
    return next((e for e in _load() if e.get("machine") == want), None)


def ceilings(threads: int, device: str = "cpu", refresh: bool = False) -> dict[str, Any]:
    """This machine's ceilings with ``threads`` threads: kept ones, else measured now and kept."""
    if device != "cpu":
        raise ValueError(f"ceilings on {device!r} are measured on a GPU host, not here")
    if not refresh:
        found = kept(threads, device)
        if found is not None:
            return {**found, "cached": True}
    entry = {"machine": machine_key(threads, device), **measure_cpu(threads)}
    entries = [e for e in _load() if e.get("machine") != entry["machine"]] + [entry]
    os.makedirs(cache_dir(), exist_ok=True)
    tmp = _path() + f".{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(entries, f, indent=1)
    os.replace(tmp, _path())  # a reader never sees half a file
    return {**entry, "cached": False}


def bandwidth(entry: dict[str, Any]) -> float:
    """The bandwidth a kernel's minimum bytes are held to: the best of copy and triad (bytes
    both read and written, as a kernel's are), in GB/s."""
    bw = entry["bandwidth_gbs"]
    return max(bw["copy"]["best"], bw["triad"]["best"])

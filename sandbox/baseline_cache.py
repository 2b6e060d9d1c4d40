"""The judge's cache of CPU baseline timings (eager and torch.compile).

A speedup's baseline is timed in the same judge run as the candidate: a
timing made earlier carries whatever load the machine had then (a cached
eager median timed under load once made an unchanged kernel read 1.7x).
So eager is never taken from here. torch.compile costs tens of seconds to
compile, so its timing is kept per reference source + sizes + torch version
+ CPU model + thread count, next to the eager timing made with it, and
stands in for a fresh one only when this run's fresh eager timing agrees
with that cached eager timing (``timing.agrees``: the machine is as loaded
as when the pair was timed); otherwise torch.compile is timed again and the
pair replaced. Only the judge reads and writes it (JSON, never executed).

torch.compile's own cache (inductor's compiled graphs and kernels) is kept
here too, per reference source (``compiled_key``): the reference's job packs
it once compiled (before any candidate runs), the judge stores the bytes, and
the next job of the same reference unpacks them before compiling (~12 s ->
~4 s for a small model here). The judge never opens them; only a job of the
same reference text gets them back, inside the sandbox.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import tempfile
from typing import Any

NAMES = ("baseline_eager", "baseline_compile")
# A baseline whose interquartile range exceeds this share of its median was disturbed
# (load on shared cores): it is used for this evaluation but not kept for later ones.
MAX_RELATIVE_IQR = 0.2


def too_noisy(times_ms: list[float]) -> bool:
    if len(times_ms) < 2:
        return True
    q1, median, q3 = statistics.quantiles(times_ms, n=4)
    return median <= 0 or (q3 - q1) / median > MAX_RELATIVE_IQR


def cache_dir() -> str:
    return os.environ.get("KFORGE_JUDGE_BASELINE_CACHE") or os.path.join(
        tempfile.gettempdir(), f"kforge-judge-baselines-{os.getuid()}")


# Bumped when the way baselines are timed changes: frames timed the old way are not reused.
TIMING_RULES = "one repetition per fresh input set, 64 MB single-thread flush, each output released before the next call"


def key(source: str, sizes: dict[str, Any], machine: dict[str, Any], reps: int, compile_baseline: bool) -> str:
    h = hashlib.sha256()
    h.update(json.dumps({"sizes": sizes, "machine": machine, "reps": reps, "compile": compile_baseline,
                         "timing": TIMING_RULES},
                        sort_keys=True, default=str).encode())
    h.update(source.encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:32]


# torch.compile caches larger than this are not kept (a few hundred KB is usual).
MAX_COMPILED_BYTES = 32 << 20


def compiled_key(source: str, machine: dict[str, Any]) -> str:
    h = hashlib.sha256(json.dumps(machine, sort_keys=True, default=str).encode())
    h.update(source.encode("utf-8", "surrogatepass"))
    return "compiled-" + h.hexdigest()[:32]


def compiled_lookup(k: str) -> bytes | None:
    try:
        with open(os.path.join(cache_dir(), f"{k}.tar"), "rb") as f:
            data = f.read(MAX_COMPILED_BYTES + 1)
    except OSError:
        return None
    return data if len(data) <= MAX_COMPILED_BYTES else None


def compiled_store(k: str, data: bytes) -> None:
    if not data or len(data) > MAX_COMPILED_BYTES:
        return
    _write(f"{k}.tar", data)


def lookup(k: str) -> list[dict[str, Any]] | None:
    try:
        with open(os.path.join(cache_dir(), f"{k}.json"), encoding="utf-8") as f:
            frames = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(frames, list) or not all(isinstance(x, dict) and x.get("name") in NAMES for x in frames):
        return None
    return [{**x, "kind": "timing", "cached": True} for x in frames]


def settle(k: str, cached: list[dict[str, Any]] | None, fresh: list[dict[str, Any]],
           compile_baseline: bool) -> list[dict[str, Any]]:
    """After the reference's run: the cached torch.compile frame to use (when
    the runner accepted it and timed no compile of its own), else nothing,
    and the cache updated with a fresh pair."""
    by_name = {f.get("name"): f for f in fresh}
    if not compile_baseline or "baseline_compile" in by_name:
        if "baseline_eager" in by_name:
            store(k, fresh)
        return []
    old = {f.get("name"): f for f in cached or []}
    comp, eager = old.get("baseline_compile"), by_name.get("baseline_eager")
    if comp is None or eager is None:
        return []
    checked = {"fresh_eager_median_ms": statistics.median(eager["times_ms"]),
               "cached_eager_median_ms": statistics.median(old["baseline_eager"]["times_ms"])}
    return [{**comp, "checked": checked}]


def store(k: str, frames: list[dict[str, Any]]) -> None:
    keep = [{"name": f["name"], "times_ms": [float(t) for t in f["times_ms"]], "sets": f.get("sets"),
             "label": f.get("label"), "cpu_model": f.get("cpu_model"), "threads": f.get("threads"),
             "flush_bytes": f.get("flush_bytes")}
            for f in frames if f.get("name") in NAMES and f.get("times_ms")]
    if not keep or any(too_noisy(f["times_ms"]) for f in keep):
        return
    _write(f"{k}.json", json.dumps(keep).encode())


def _write(name: str, data: bytes) -> None:
    """Atomically, into the cache directory (made private if new)."""
    directory = cache_dir()
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, os.path.join(directory, name))

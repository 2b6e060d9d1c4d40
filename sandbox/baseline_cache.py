"""The judge's cache of CPU baseline timings (eager and torch.compile).

Timing a reference's baselines on the CPU takes seconds (and torch.compile
tens of seconds); they depend on the reference, its sizes and the machine,
not on the candidate. So they are kept per reference source + sizes + torch
version + CPU model + thread count, as the timing frames the reference's
runner sent, and reused by later evaluations on the same machine. Only the
judge reads and writes it (JSON, never executed).
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
    if len(times_ms) < 4:
        return False
    q1, median, q3 = statistics.quantiles(times_ms, n=4)
    return median <= 0 or (q3 - q1) / median > MAX_RELATIVE_IQR


def cache_dir() -> str:
    return os.environ.get("KFORGE_JUDGE_BASELINE_CACHE") or os.path.join(
        tempfile.gettempdir(), f"kforge-judge-baselines-{os.getuid()}")


# Bumped when the way baselines are timed changes: frames timed the old way are not reused.
TIMING_RULES = "one repetition per fresh input set, 64 MB single-thread flush"


def key(source: str, sizes: dict[str, Any], machine: dict[str, Any], reps: int, compile_baseline: bool) -> str:
    h = hashlib.sha256()
    h.update(json.dumps({"sizes": sizes, "machine": machine, "reps": reps, "compile": compile_baseline,
                         "timing": TIMING_RULES},
                        sort_keys=True, default=str).encode())
    h.update(source.encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:32]


def lookup(k: str) -> list[dict[str, Any]] | None:
    try:
        with open(os.path.join(cache_dir(), f"{k}.json"), encoding="utf-8") as f:
            frames = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(frames, list) or not all(isinstance(x, dict) and x.get("name") in NAMES for x in frames):
        return None
    return [{**x, "kind": "timing", "cached": True} for x in frames]


def store(k: str, frames: list[dict[str, Any]]) -> None:
    keep = [{"name": f["name"], "times_ms": [float(t) for t in f["times_ms"]], "plain_reps": f.get("plain_reps"),
             "label": f.get("label"), "cpu_model": f.get("cpu_model"), "threads": f.get("threads"),
             "flush_bytes": f.get("flush_bytes")}
            for f in frames if f.get("name") in NAMES and f.get("times_ms")]
    if not keep or any(too_noisy(f["times_ms"]) for f in keep):
        return
    directory = cache_dir()
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(keep, f)
    os.replace(tmp, os.path.join(directory, f"{k}.json"))

"""Cached baseline timings, keyed by GPU kind, torch version and problem source.

What the cache saves, and what it does not:

- The judge runs the reference in every evaluation, always: correctness is
  decided against the reference's outputs on fresh inputs, so that cannot be
  cached. The eager reference is timed in the same sandbox job, alongside the
  candidate; the batch uses that fresh number for `speedup_vs_eager` (same
  conditions as the candidate) and keeps the cached one only to show drift.
- `torch.compile` of the reference is the expensive baseline (compilation plus
  timing). The batch never asks for it during a search; the final evaluation of
  a problem's best kernel measures it once and stores it here. A later run on
  the same GPU kind, torch version and reference source takes it from here
  instead of compiling again, and `speedup_vs_compile` is then the cached
  compile median over the candidate's median from its own evaluation.
- Only CUDA timings are cached; CPU timings say nothing about GPU speed.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
import time
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any


def default_path() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "kforge" / "baselines.json"


def source_signature(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def _torch_version() -> str:
    try:
        return version("torch")
    except PackageNotFoundError:
        return "unknown"


class BaselineCache:
    """One JSON file, read and written under an exclusive lock: several worker
    processes (and several runs) share it safely."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @staticmethod
    def key(gpu: str, source: str) -> str:
        return f"{gpu}|torch {_torch_version()}|{source_signature(source)}"

    @contextmanager
    def _locked(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, gpu: str, source: str) -> dict[str, Any] | None:
        with self._locked():
            entry = self._read().get(self.key(gpu, source))
        return entry if isinstance(entry, dict) and entry.get("baseline_compile") else None

    def put(self, gpu: str, source: str, timing: dict[str, Any]) -> None:
        """Store the eager and compile medians of one evaluation's timing."""
        if not timing.get("baseline_compile"):
            return
        entry = {"gpu": gpu, "torch": _torch_version(), "measured_at": time.time(),
                 "baseline_eager": timing.get("baseline_eager"), "baseline_compile": timing["baseline_compile"]}
        with self._locked():
            data = self._read()
            data[self.key(gpu, source)] = entry
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".baselines-")
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, indent=1)
            os.replace(tmp, self.path)

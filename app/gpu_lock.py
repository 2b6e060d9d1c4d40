"""Only one timing at a time per GPU: an exclusive file lock per device
around every evaluation, shared by all worker processes on the host."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Any


class LockedEvaluator:
    """Wraps the judge; evaluate() and tune() hold the device's lock (analyze does not time).
    Without tune() here the service's and the MCP tools' searches skipped the tuning pass
    (the search runs it only when its evaluator has one)."""

    def __init__(self, judge: Any, lock_dir: Path, device_key: str, enabled: bool = True) -> None:
        self.judge = judge
        self.enabled = enabled  # CPU evaluations time nothing that matters: no lock
        self.path = lock_dir / f"kforge-gpu-{device_key}.lock"

    def analyze(self, *args: Any, **kwargs: Any) -> Any:
        return self.judge.analyze(*args, **kwargs)

    def evaluate(self, *args: Any, **kwargs: Any) -> Any:
        return self._locked("evaluate", *args, **kwargs)

    def tune(self, *args: Any, **kwargs: Any) -> Any:
        return self._locked("tune", *args, **kwargs)

    def _locked(self, method: str, *args: Any, **kwargs: Any) -> Any:
        call = getattr(self.judge, method)
        if not self.enabled:
            return call(*args, **kwargs)
        with open(self.path, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                return call(*args, **kwargs)
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def device_key() -> str:
    return os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0] or "0"

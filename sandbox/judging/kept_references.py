"""Replayed references: one search's candidates share their reference's correctness trials
(same seeds) on a warm judge, instead of running the reference again for each."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from ..drivers.base import JobOutcome
from ..problem import Problem

if TYPE_CHECKING:
    from ..options import EvalOptions


# Replayed references: how many, and the least of the most memory their trials may hold
# each; a machine with more memory free keeps larger ones (``kept_reference_bytes``).
KEPT_REFERENCES = 2
KEPT_REFERENCE_BYTES = 1 << 30


def kept_reference_bytes() -> int:
    """The most memory one replayed reference's trials may hold: a third of what the machine
    has available now, at least KEPT_REFERENCE_BYTES. A problem fitted to a GB a call
    (KernelBench under ``--fit-memory 1``) holds 3-4 GB of trials: its reference is replayed
    where memory allows, and run again for every candidate (~17 s each) where it does not."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            available = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return KEPT_REFERENCE_BYTES
    return max(KEPT_REFERENCE_BYTES, available // 3)


def key(problem: Problem, name: str, device: str, options: EvalOptions) -> str:
    """What a reference's correctness trials depend on: its source, device, trial count and threads."""
    text = "\0".join([problem.run_source, name, device, str(options.trials), str(options.threads)])
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def nbytes(value: Any) -> int:
    if hasattr(value, "element_size") and hasattr(value, "nelement"):
        return int(value.element_size() * value.nelement())
    if isinstance(value, dict):
        return sum(nbytes(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(nbytes(v) for v in value)
    return 0


class KeptReferences:
    """Reference key -> (its correctness trials' plan entries, their frames), newest last."""

    def __init__(self) -> None:
        self._kept: OrderedDict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = OrderedDict()

    def get(self, k: str | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
        found = self._kept.get(k) if k is not None else None
        if found is not None:
            self._kept.move_to_end(k)
        return found

    def keep(self, k: str, plan: list[dict[str, Any]], ref: JobOutcome) -> None:
        """The reference's correctness trials, for the next candidates of the same reference."""
        trials = [p for p in plan if p["tag"] != "timing"]
        indexes = {p["index"] for p in trials}
        frames = [f for f in ref.of_kind("trial") if f.get("index") in indexes]
        # a fallback trial runs only where the one before it failed
        if not {f["index"] for f in frames} >= {p["index"] for p in trials if not p.get("fallback")} \
                or nbytes(frames) > kept_reference_bytes():
            return
        self._kept[k] = (trials, frames)
        while len(self._kept) > KEPT_REFERENCES:
            self._kept.popitem(last=False)

"""Hard limits on a search, checked before every model call and candidate."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from .. import backends


class LimitsExceeded(Exception):
    """A budget ran out; the message says which."""


class TargetReached(Exception):
    """A verified candidate reached the target speedup, or so near the machine's ceiling that
    little is left to win (``Budget.near_ceiling``)."""


@dataclass
class SearchConfig:
    max_rounds: int = 3
    candidates_per_round: int = 2
    max_repairs: int = 2
    max_candidates: int = 30
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    max_wall_s: float | None = None
    target_speedup: float | None = None
    stagnation_rounds: int = 2
    backend: str = "triton"             # "triton" | "cuda" | "cpu" (C kernels built by kforge_native)
    offline_starters: int = 4
    # further offline proposals judged while no verified kernel beats eager (where speed is measured)
    offline_extra: int = 4
    # backend cpu: the engine's wider space, this many variants timed by the judge's tuning pass
    # (sandbox/tuning.py) before the fastest are judged in full; 0: no tuning pass
    tune_variants: int = 24
    parallel: int = 4
    # a verified kernel at this fraction of its roofline bound (the machine's kept ceilings,
    # sandbox/verdict/roofline.py), and not slower than eager, ends the search; None: never
    roofline_stop: float | None = 0.8

    def __post_init__(self) -> None:
        backends.check(self.backend)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Budget:
    def __init__(self, config: SearchConfig, already_spent_s: float = 0.0) -> None:
        self.config = config
        self.started = time.monotonic() - already_spent_s

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def check(self, usage: dict[str, float], candidates: int) -> None:
        c = self.config
        if c.max_candidates is not None and candidates >= c.max_candidates:
            raise LimitsExceeded(f"candidate budget of {c.max_candidates} reached")
        if c.max_tokens is not None and usage["input_tokens"] + usage["output_tokens"] >= c.max_tokens:
            raise LimitsExceeded(f"token budget of {c.max_tokens} reached")
        if c.max_cost_usd is not None and usage["cost_usd"] >= c.max_cost_usd:
            raise LimitsExceeded(f"cost budget of ${c.max_cost_usd:.2f} reached")
        if c.max_wall_s is not None and self.elapsed() >= c.max_wall_s:
            raise LimitsExceeded(f"wall-time budget of {c.max_wall_s:g} s reached")

    def reached_target(self, speedup: float | None) -> bool:
        return self.config.target_speedup is not None and speedup is not None and speedup >= self.config.target_speedup

    def near_ceiling(self, speedup: float | None, roofline: dict[str, Any]) -> float | None:
        """The kernel's fraction of its roofline bound when it ends the search: at least
        ``roofline_stop``, and the kernel not slower than eager (a baseline at the ceiling too
        leaves the kernel nothing to win, but the result must not read as one)."""
        stop = self.config.roofline_stop
        fraction = ((roofline or {}).get("parties") or {}).get("kernel", {}).get("fraction")
        if stop is None or fraction is None or speedup is None or speedup < 1.0:
            return None
        return fraction if fraction >= stop else None

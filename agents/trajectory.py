"""Everything a search did, saved after every attempt so it can be resumed
and replayed: plans, candidates with their code and the judge's result, and
what each model call cost."""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .comparison import compare_attempt


@dataclass
class Attempt:
    id: str
    round: int
    strategy: str
    code: str
    source: str  # "llm" | "offline" | "archive"
    parent_id: str | None = None
    verdict: str = "pending"  # pending | pass | fail | error
    reasons: list[str] = field(default_factory=list)
    checks: dict[str, str] = field(default_factory=dict)
    check_details: dict[str, str] = field(default_factory=dict)
    speedup: float | None = None
    timing: dict[str, Any] = field(default_factory=dict)
    review: dict[str, Any] = field(default_factory=dict)
    repair_of: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    elapsed_s: float = 0.0
    prompt_excerpt: str = ""
    judge_cost: dict[str, Any] = field(default_factory=dict)  # the judge's seconds by phase for this attempt
    roofline: dict[str, Any] = field(default_factory=dict)  # the judge's: each party's fraction of the bound


@dataclass
class Round:
    index: int
    plan: list[dict[str, Any]] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    replanned: bool = False


@dataclass
class Trajectory:
    problem: str
    reference: str
    config: dict[str, Any]
    label: str
    rounds: list[Round] = field(default_factory=list)
    usage: dict[str, float] = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0})
    started_at: float = field(default_factory=time.time)
    elapsed_s: float = 0.0
    stop_reason: str | None = None
    strategies_used: list[dict[str, Any]] = field(default_factory=list)
    # the offline engine's plan (agents.offline.Plan.to_json): the family it used, or why it had none
    offline: dict[str, Any] = field(default_factory=dict)
    # the tuning pass before the offline round (sandbox.tuning.TuneResult.to_json, with each
    # variant's family and parameters): what every variant measured, in what order they were judged
    tuning: dict[str, Any] = field(default_factory=dict)

    def attempts(self) -> list[Attempt]:
        return [a for r in self.rounds for a in r.attempts]

    def best(self) -> Attempt | None:
        passing = [a for a in self.attempts() if a.verdict == "pass"]
        if not passing:
            return None
        # The fastest verified kernel wins where the judge measured speedups (CUDA; native C on
        # the CPU). Where none was measured (Triton's interpreter) every key is 0 and max keeps
        # the first verified kernel.
        return max(passing, key=lambda a: (a.speedup if a.speedup is not None else 0.0))

    def add_usage(self, input_tokens: int, output_tokens: int, cost_usd: float) -> None:
        self.usage["input_tokens"] += input_tokens
        self.usage["output_tokens"] += output_tokens
        self.usage["cost_usd"] += cost_usd

    def save(self, path: str | Path) -> None:
        """Atomic write: a crash mid-save leaves the previous file intact."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".traj-")
        with os.fdopen(fd, "w") as f:
            json.dump(self.to_dict(), f, indent=1)
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str | Path) -> Trajectory:
        return cls.from_dict(json.loads(Path(path).read_text()))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        data = dict(data)
        rounds = [Round(index=r["index"], plan=r["plan"], replanned=r.get("replanned", False),
                        attempts=[Attempt(**a) for a in r["attempts"]]) for r in data.pop("rounds")]
        return cls(rounds=rounds, **data)

    def summary(self) -> dict[str, Any]:
        """The CLI's JSON contract: ``best`` and ``rounds``; ``comparison`` names the fastest of
        {best kernel, eager, torch.compile} from the best kernel's judge run (comparison.py)."""
        best = self.best()
        return {
            "problem": self.problem,
            "label": self.label,
            "comparison": compare_attempt(best).to_json(),
            "best": None if best is None else {
                "id": best.id, "code": best.code, "verdict": best.verdict, "speedup": best.speedup,
                "strategy": best.strategy, "source": best.source, "timing": best.timing, "roofline": best.roofline},
            "rounds": [{
                "index": r.index, "replanned": r.replanned,
                "plan": [s.get("title", "") for s in r.plan],
                "candidates": [{
                    "id": a.id, "parent_id": a.parent_id, "repair_of": a.repair_of, "strategy": a.strategy,
                    "source": a.source, "verdict": a.verdict, "reasons": a.reasons, "speedup": a.speedup,
                    "input_tokens": a.input_tokens, "output_tokens": a.output_tokens, "cost_usd": a.cost_usd,
                    "elapsed_s": a.elapsed_s,
                    "roofline": ((a.roofline.get("parties") or {}).get("kernel") or {}).get("fraction")}
                    for a in r.attempts]}
                for r in self.rounds],
            "usage": self.usage,
            "elapsed_s": self.elapsed_s,
            "stop_reason": self.stop_reason,
            "strategies_used": self.strategies_used,
            "offline": self.offline,
            "tuning": self.tuning,
        }

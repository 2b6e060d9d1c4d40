"""What every part shares: the verdict of a part and where the bundled files are."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

REPO = Path(__file__).resolve().parents[2]
PROBLEMS = REPO / "problems"
FIXTURES = REPO / "tests" / "fixtures" / "judge"


class OptionsFor(Protocol):
    """Judge options for a backend ("triton" | "cpu"), built by app.compose.eval_options."""

    def __call__(self, backend: str, **overrides: Any) -> Any: ...


@dataclass
class Part:
    name: str
    verdict: str = "fail"  # pass | warn | fail
    summary: str = ""
    cases: list[dict[str, Any]] = field(default_factory=list)
    numbers: dict[str, Any] = field(default_factory=dict)
    elapsed_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "verdict": self.verdict, "summary": self.summary, "numbers": self.numbers,
                "cases": self.cases, "elapsed_s": round(self.elapsed_s, 1)}


def load_per_core() -> float:
    """1-minute load average per CPU: how shared the host is while we measure."""
    return os.getloadavg()[0] / max(1, os.cpu_count() or 1)


def failed_checks(result: Any) -> list[str]:
    return [c.name for c in result.checks if c.outcome == "fail"]


def header(path: Path, key: str) -> str | None:
    """A ``# key: value`` line among a fixture's or solution's first lines."""
    pattern = re.compile(rf"^#\s*{re.escape(key)}:\s*(.+?)\s*$")
    for line in path.read_text().splitlines()[:6]:
        if found := pattern.match(line):
            return found.group(1)
    return None

"""What a matcher finds: a family and the spec its templates render, or NoMatch and why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..template_context import Context

FLOATS = ("float32", "float16", "bfloat16", "float64")


@dataclass
class Match:
    family: str               # the template: elementwise | softmax | norm | reduction | matmul
    kind: str                 # what was recognised, e.g. "log_softmax", "rms_norm (written out)"
    ctx: Context
    spec: dict[str, Any] = field(default_factory=dict)
    note: str = ""


@dataclass
class MatchReport:
    matches: list[Match]
    reasons: list[str]

    @property
    def reason(self) -> str:
        return "; ".join(dict.fromkeys(self.reasons)) or "no family matched"


class NoMatch(Exception):
    pass

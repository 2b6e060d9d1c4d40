"""What the knowledge base holds: strategies with their evidence, and the
archive of the best verified kernel per problem signature.

Plain dataclasses that round-trip through JSON (``to_dict`` / ``from_dict``);
times are Unix seconds, like the search trajectory's.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypedDict

from taxonomy import op_families

Source = Literal["seed", "learned:llm", "learned:offline"]
SOURCES: tuple[str, ...] = ("seed", "learned:llm", "learned:offline")
FAMILIES: tuple[str, ...] = op_families.NAMES  # the one table's families, elementwise and "other"
ANY = "any"  # in an applies_to list: no restriction


class AppliesTo(TypedDict, total=False):
    op_families: list[str]  # FAMILIES, or ["any"]
    backends: list[str]     # "triton", "cuda"; empty = any
    archs: list[str]        # "sm_80", ">=sm_80", "cpu"; empty = any
    dtypes: list[str]       # "float32", "float16", "bfloat16"; empty = any
    shape_regime: str       # free text: "rows up to ~16k columns", "large K"


def applies_to(op_families: list[str] | None = None, backends: list[str] | None = None,
               archs: list[str] | None = None, dtypes: list[str] | None = None, shape_regime: str = "") -> AppliesTo:
    return {"op_families": list(op_families or [ANY]), "backends": list(backends or []),
            "archs": list(archs or []), "dtypes": list(dtypes or []), "shape_regime": shape_regime}


@dataclass
class Evidence:
    """One candidate that used a strategy, and how the judge found it."""

    job_id: str
    problem: str
    signature: str
    attempt_id: str
    speedup: float | None   # over eager; None when not measured (no GPU) or not passing
    verdict: str            # pass | fail | error
    arch: str               # "sm_90", "cpu"
    backend: str
    at: float = field(default_factory=time.time)
    # the kernel's fraction of its roofline bound on the machine that judged it (issue 56):
    # how much a strategy left to win there; None where no ceilings were kept
    fraction: float | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.job_id, self.attempt_id)

    @property
    def regression(self) -> bool:
        return self.verdict == "pass" and self.speedup is not None and self.speedup < 1.0


@dataclass
class Strategy:
    id: str
    title: str
    summary: str
    rationale: str
    applies_to: AppliesTo
    source: str                         # Source
    evidence: list[Evidence] = field(default_factory=list)
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    confidence: float = 0.5

    @property
    def families(self) -> list[str]:
        return list(self.applies_to.get("op_families") or [ANY])

    def text(self) -> str:
        """What is embedded and keyword-indexed. Dtype tags are left out: they would match every
        query that names a dtype, whatever the operation."""
        a = self.applies_to
        tags = " ".join(f for f in a.get("op_families", []) if f != ANY)
        return f"{self.title}. {self.summary} {self.rationale} {a.get('shape_regime', '')} {tags}".strip()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Strategy:
        data = dict(data)
        evidence = [Evidence(**e) for e in data.pop("evidence", [])]
        given = data.pop("applies_to", None) or {}
        base = applies_to(given.get("op_families"), given.get("backends"), given.get("archs"), given.get("dtypes"),
                          str(given.get("shape_regime", "")))
        return cls(evidence=evidence, applies_to=base, **data)


@dataclass
class ArchiveEntry:
    """The best verified kernel seen for a problem signature on one (backend, arch)."""

    signature: str
    problem: str
    code: str
    speedup: float | None   # None: verified without a GPU, speed unknown
    arch: str
    backend: str
    job_id: str
    attempt_id: str
    at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ArchiveEntry:
        return cls(**data)

    def better_than(self, other: ArchiveEntry | None) -> bool:
        """A measured speedup beats an unmeasured one; otherwise the higher wins; ties keep the older."""
        if other is None:
            return True
        if self.speedup is None:
            return False
        return other.speedup is None or self.speedup > other.speedup

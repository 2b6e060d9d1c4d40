"""What a worker needs to run a job, one typed spec per job kind, read from
the job's row (the row stays the record; the spec is its typed view)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..db.models import Job

# The job's `config` keys a search takes (the rest of SearchConfig comes from Settings and the job's columns).
SEARCH_FIELDS = ("max_rounds", "candidates_per_round", "max_repairs", "max_cost_usd", "max_tokens", "max_wall_s",
                 "target_speedup")


@dataclass(frozen=True)
class EvaluateSpec:
    """Judge one candidate against a reference."""

    reference: str
    candidate: str
    device: str | None
    backend: str = "triton"
    kind: Literal["evaluate"] = "evaluate"


@dataclass(frozen=True)
class OptimizeSpec:
    """Search for a faster kernel; `trajectory` is the saved search a resumed job continues."""

    problem_name: str
    reference: str
    backend: str
    provider: str
    model: str | None
    base_url: str | None
    config: dict[str, Any]
    trajectory: dict[str, Any] | None
    kind: Literal["optimize"] = "optimize"

    @property
    def device(self) -> str | None:
        return self.config.get("device")

    @property
    def backend_choice(self) -> dict[str, Any] | None:
        """What the worker chose for ``auto`` (or was asked for) and why; None until it ran."""
        return self.config.get("backend_choice")

    def search_fields(self) -> dict[str, Any]:
        return {k: v for k, v in self.config.items() if k in SEARCH_FIELDS}


JobSpec = EvaluateSpec | OptimizeSpec


def spec_of(job: Job) -> JobSpec:
    config = job.config or {}
    if job.kind == "evaluate":
        return EvaluateSpec(reference=job.reference, candidate=job.candidate or "", device=config.get("device"),
                            backend=job.backend or "triton")
    return OptimizeSpec(problem_name=job.problem_name, reference=job.reference, backend=job.backend or "triton",
                        provider=job.provider, model=job.model, base_url=job.base_url, config=dict(config),
                        trajectory=job.trajectory)

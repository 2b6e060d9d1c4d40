"""What every role is told about the problem, built once per search."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .cpu_profile import describe_counters, describe_cpu, describe_ops


class Evaluator(Protocol):
    """The judge as the agents see it (sandbox.Judge satisfies this)."""

    def analyze(self, reference: str, reference_name: str = ..., options: Any = ...) -> dict[str, Any]: ...

    def evaluate(self, reference: str, candidate: str, reference_name: str = ..., candidate_name: str = ...,
                 options: Any = ...) -> Any: ...


@runtime_checkable
class Tuner(Protocol):
    """A judge that also runs the tuning pass (many variants of one proposal timed side by side)."""

    def tune(self, reference: str, candidates: list[str], reference_name: str = ..., options: Any = ...) -> Any: ...


@runtime_checkable
class Proposer(Protocol):
    """Writes starter kernels for round 0 (the offline engine, or a stand-in in tests)."""

    def propose(self, analysis: dict[str, Any], n: int) -> list[Any]: ...


@runtime_checkable
class PlanningEngine(Protocol):
    """An engine that plans its proposals and says why (``plan(...).reason``); the search
    asks it instead of ``propose``."""

    def plan(self, analysis: dict[str, Any], n: int, signature: Any = ...) -> Any: ...


@runtime_checkable
class TuningEngine(Protocol):
    """An engine with a wider space for the judge's tuning pass to time."""

    def tuning_plan(self, analysis: dict[str, Any], n: int, signature: Any = ...) -> Any: ...


@runtime_checkable
class PerBackend(Protocol):
    """An engine that writes a different kind of kernel per backend (C for cpu, Triton else)."""

    def for_backend(self, backend: str) -> Proposer: ...


class StrategySource(Protocol):
    """Where the planner's strategies from earlier runs come from (the knowledge base)."""

    def retrieve(self, analysis: dict[str, Any], reference: str, backend: str, k: int = 5) -> list[dict[str, Any]]: ...


class NoStrategies:
    def retrieve(self, analysis: dict[str, Any], reference: str, backend: str, k: int = 5) -> list[dict[str, Any]]:
        return []


@dataclass
class Context:
    reference: str
    reference_name: str
    analysis: dict[str, Any]
    backend: str = "triton"
    strategies: list[dict[str, Any]] = field(default_factory=list)

    @property
    def device(self) -> str:
        return str(self.analysis.get("device", "cpu"))

    @property
    def native(self) -> bool:
        """Kernels in C on the CPU (backend cpu): timings and counters are real."""
        return self.backend == "cpu"

    @property
    def hardware(self) -> str:
        if self.native:
            return describe_cpu(self.analysis)
        return str(self.analysis.get("hardware", self.device))

    def describe_inputs(self) -> str:
        return _tensors(self.analysis.get("inputs", []))

    def describe_outputs(self) -> str:
        return _tensors(self.analysis.get("outputs", []))

    def describe_parameters(self) -> str:
        params = self.analysis.get("parameters", {})
        return ", ".join(f"{k} {v['shape']} {v['dtype']}" for k, v in params.items()) or "none"

    def describe_profile(self) -> str:
        rows = self.analysis.get("profile", [])
        if self.native:  # per-op times of the reference, and counters where perf could read them
            counters = describe_counters(self.analysis.get("counters"))
            return describe_ops(rows) + (f"\n{counters}" if counters else "")
        return "\n".join(f"- {r['op']}: {100 * r['share']:.1f}% ({r['calls']} call(s))" for r in rows[:10]) or "- (empty)"

    def describe_strategies(self) -> str:
        if not self.strategies:
            return "(none retrieved)"
        lines = []
        for s in self.strategies:
            evidence = s.get("evidence_summary") or s.get("evidence") or ""
            lines.append(f"- [{s.get('id', '?')}] **{s.get('title', '')}** ({s.get('source', 'knowledge base')}): "
                         f"{s.get('summary', '')} {('Evidence: ' + json.dumps(evidence)) if evidence else ''}".strip())
        return "\n".join(lines)


def _tensors(items: list[Any]) -> str:
    out = []
    for t in items:
        out.append(f"tensor{t['shape']} {t['dtype']}" if isinstance(t, dict) and "shape" in t else repr(t))
    return ", ".join(out) or "none"

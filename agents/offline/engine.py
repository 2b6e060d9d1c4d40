"""The offline engine: starter kernels without an LLM.

Used when no provider is configured, and to hand LLM runs a verified starting
point. It reads the sandbox's analysis of the reference (never the reference
itself), matches a family of our own parametrised templates (Triton for the
triton and cuda backends, C for cpu), renders a candidate per parameter set, and
lets the judge decide: the same judge and checks as LLM candidates, results
labelled as non-LLM. Where the judge measures real speedups (CUDA; native C on
the CPU) every proposal is timed and the fastest verified one wins.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from sandbox import EvalOptions

from .match import Match, MatchReport, match_report
from .signature import Signature, from_source
from .templates import families_for
from .templates.common import NotRenderable
from .tune_space import widen

LABEL = "offline engine (no LLM)"
log = logging.getLogger(__name__)


class EvalResultLike(Protocol):
    verdict: str
    reasons: list[str]
    timing: dict[str, Any]

    @property
    def speedup(self) -> float | None: ...


class JudgeLike(Protocol):
    """What the engine needs of sandbox.Judge."""

    def analyze(self, reference: str, reference_name: str = ..., options: EvalOptions | None = ...
                ) -> dict[str, Any]: ...

    def evaluate(self, reference: str, candidate: str, reference_name: str = ..., candidate_name: str = ...,
                 options: EvalOptions | None = ...) -> EvalResultLike: ...


@dataclass(frozen=True)
class Proposal:
    family: str
    params: dict[str, Any]
    source: str
    note: str


@dataclass
class Plan:
    """What the engine would do with a reference on one backend: its proposals, best
    first, or the reason it has none, naming the op no family covers or the family
    whose template this backend lacks."""

    backend: str
    proposals: list[Proposal] = field(default_factory=list)
    matched: list[str] = field(default_factory=list)   # "family: kind" of every match, best first
    skipped: list[str] = field(default_factory=list)   # matches this backend's templates do not render, and why
    reason: str = ""                                   # why there is no proposal ("" when there is one)

    @property
    def family(self) -> str | None:
        return self.proposals[0].family if self.proposals else None

    def to_json(self) -> dict[str, Any]:
        """Everything but the sources: what batch records and `problems list --families` carry."""
        return {"backend": self.backend, "family": self.family, "matched": self.matched, "skipped": self.skipped,
                "reason": self.reason, "proposals": len(self.proposals)}


class OfflineEngine:
    """Proposes candidates from the templates of one backend, best guess first."""

    label = LABEL

    def __init__(self, backend: str = "triton") -> None:
        self.backend = backend
        self.templates = families_for(backend)

    def for_backend(self, backend: str) -> OfflineEngine:
        """This engine if it writes for ``backend``, else one that does."""
        return self if backend == self.backend else OfflineEngine(backend)

    def families(self) -> list[str]:
        return list(self.templates)

    def autotune_space(self, family: str) -> list[dict[str, Any]]:
        """The parameter sets tried for a family, best guess first."""
        return [dict(p) for p in self.templates[family].PARAM_SPACE]

    def report(self, analysis: dict[str, Any], signature: Signature | None = None) -> MatchReport:
        return match_report(analysis, signature)

    def propose(self, analysis: dict[str, Any], max_candidates: int = 4, signature: Signature | None = None,
                ) -> list[Proposal]:
        """Up to ``max_candidates`` candidates: the first parameter set of every match (in
        match order), then the second of every match, and so on."""
        return self.plan(analysis, max_candidates, signature).proposals

    def plan(self, analysis: dict[str, Any], max_candidates: int = 4, signature: Signature | None = None,
             wide: bool = False) -> Plan:
        """The proposals, or why there are none; ``wide``: from every family's wider space
        (``tune_space.widen``: the tuning pass's variants)."""
        return self.plan_for(self.report(analysis, signature), max_candidates, wide)

    def tuning_plan(self, analysis: dict[str, Any], max_candidates: int, signature: Signature | None = None) -> Plan:
        """The variants a tuning pass times: the wider spaces' proposals."""
        return self.plan(analysis, max_candidates, signature, wide=True)

    def plan_for(self, report: MatchReport, max_candidates: int, wide: bool = False) -> Plan:
        plan = Plan(self.backend, matched=[f"{m.family}: {m.kind}" for m in report.matches])
        plan.proposals = self._render(report.matches, max_candidates, plan.skipped, wide)
        if plan.proposals:
            return plan
        if not report.matches:
            plan.reason = report.reason
        else:
            plan.reason = "; ".join(plan.skipped) or "every template failed to render (a bug: see the log)"
        return plan

    def proposals(self, matches: list[Match], max_candidates: int) -> list[Proposal]:
        return self._render(matches, max_candidates, [])

    def space(self, family: str, wide: bool = False) -> list[dict[str, Any]]:
        space = self.templates[family].PARAM_SPACE
        return widen(space) if wide else space

    def match_space(self, match: Match, wide: bool = False) -> list[dict[str, Any]]:
        """A match's parameter sets: its family's, or (the pipeline) ones that depend on its stages."""
        template = self.templates[match.family]
        if hasattr(template, "space_for"):
            return template.space_for(match, wide)
        return self.space(match.family, wide)

    def _render(self, matches: list[Match], max_candidates: int, skipped: list[str], wide: bool = False,
                ) -> list[Proposal]:
        out: list[Proposal] = []
        seen: set[str] = set()
        usable = []
        for m in matches:
            if m.family in self.templates:
                usable.append(m)
            else:
                skipped.append(f"{m.family} ({m.kind}): no {m.family} template for backend {self.backend}")
        spaces = {id(m): self.match_space(m, wide) for m in usable}
        depth = max((len(spaces[id(m)]) for m in usable), default=0)
        refused: set[int] = set()
        for rank in range(depth):
            for m in usable:
                space = spaces[id(m)]
                if rank >= len(space) or len(out) >= max_candidates or id(m) in refused:
                    continue
                params = dict(space[rank])
                try:
                    source = self.templates[m.family].render(m, params)
                except NotRenderable as exc:
                    # the match is sound but this backend's template does not cover it: say so, once
                    refused.add(id(m))
                    skipped.append(f"{m.family} ({m.kind}): the {self.backend} template does not cover it: {exc}")
                    continue
                except Exception as exc:  # a template bug must not stop the other proposals
                    log.exception("offline template %s failed to render for %s", m.family, m.kind)
                    refused.add(id(m))
                    skipped.append(f"{m.family} ({m.kind}): the {self.backend} template failed: "
                                   f"{type(exc).__name__}: {exc}")
                    continue
                if source in seen:
                    continue
                seen.add(source)
                note = "; ".join(x for x in (m.kind, ", ".join(f"{k}={v}" for k, v in params.items()), m.note) if x)
                out.append(Proposal(m.family, params, source, note))
        return out


@dataclass
class Attempt:
    proposal: Proposal
    verdict: str
    reasons: list[str]
    timing: dict[str, Any]
    speedup: float | None = None
    retried: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"family": self.proposal.family, "params": self.proposal.params, "note": self.proposal.note,
                "verdict": self.verdict, "reasons": self.reasons, "speedup": self.speedup, "timing": self.timing,
                "retried": self.retried}


@dataclass
class OfflineResult:
    device: str
    attempts: list[Attempt] = field(default_factory=list)
    best: Attempt | None = None
    selection: str = ""
    reason: str = ""          # why there is no best, when there is none
    label: str = LABEL
    plan: dict[str, Any] = field(default_factory=dict)  # Plan.to_json(): the families matched or why none

    def to_json(self) -> dict[str, Any]:
        best = None
        if self.best is not None:
            best = {"code": self.best.proposal.source, "verdict": self.best.verdict, "speedup": self.best.speedup,
                    "family": self.best.proposal.family, "params": self.best.proposal.params}
        return {"label": self.label, "device": self.device, "selection": self.selection, "reason": self.reason,
                "plan": self.plan, "best": best, "attempts": [a.to_json() for a in self.attempts]}


def measured(attempts: list[Attempt]) -> bool:
    """Whether the judge timed these candidates for real (CUDA, or native C on the CPU)."""
    return any(a.verdict == "pass" and a.speedup is not None for a in attempts)


def pick_best(attempts: list[Attempt]) -> tuple[Attempt | None, str]:
    """The fastest passing attempt when speedups were measured, else the first passing one."""
    passing = [a for a in attempts if a.verdict == "pass"]
    if measured(attempts):
        timed = [a for a in passing if a.speedup is not None]
        return (max(timed, key=lambda a: a.speedup or 0.0),
                "highest speedup over eager among passing candidates, as the judge measured it")
    return (passing[0] if passing else None), ("first passing candidate: no real timing (without a GPU Triton runs "
                                               "in its interpreter), so there is nothing to rank by")


def plan_reference(judge: JudgeLike, reference_source: str, name: str, options: EvalOptions | None = None,
                   max_candidates: int = 4, engine: OfflineEngine | None = None) -> tuple[dict[str, Any], Plan]:
    """The sandbox's analysis of a reference and the engine's plan for it (nothing judged).

    Raises sandbox.ProblemError when the reference itself is unusable (as the judge does).
    """
    engine = engine or OfflineEngine()
    analysis = judge.analyze(reference_source, name, options or EvalOptions())
    return analysis, engine.plan(analysis, max_candidates, from_source(reference_source))


def run_offline(judge: JudgeLike, reference_source: str, name: str, options: EvalOptions | None = None,
                max_candidates: int = 4, engine: OfflineEngine | None = None,
                exhaustive: bool | None = None) -> OfflineResult:
    """Analyse the reference in the sandbox, propose, and judge every proposal.

    Where timings are real -- CUDA, or the cpu backend's native C on the CPU -- every
    proposal is judged and the best is the passing one with the highest speedup (the
    autotuning of the templates' parameters). Triton on the CPU runs in its interpreter,
    timings mean nothing, and the first passing proposal is the best; the rest are not
    judged unless ``exhaustive``.

    Raises sandbox.ProblemError when the reference itself is unusable (as the judge does).
    """
    engine = engine or OfflineEngine()
    options = options or EvalOptions()
    analysis, plan = plan_reference(judge, reference_source, name, options, max_candidates, engine)
    device = analysis.get("device", "cpu")
    proposals = plan.proposals
    result = OfflineResult(device=device, plan=plan.to_json())
    if not proposals:
        result.reason = f"no offline template fits this reference: {plan.reason}"
        return result
    timed = device == "cuda" or engine.backend == "cpu"
    stop_at_first = not exhaustive if exhaustive is not None else not timed
    stem = name.rsplit("/", 1)[-1].removesuffix(".py")
    for i, proposal in enumerate(proposals):
        cand_name = f"{stem}_offline_{proposal.family}_{i}.py"
        res = judge.evaluate(reference_source, proposal.source, name, cand_name, options)
        retried = "retimed" in (res.timing or {})  # the judge ran it twice (Judge.evaluate)
        attempt = Attempt(proposal, res.verdict, list(res.reasons), dict(res.timing or {}), res.speedup, retried)
        result.attempts.append(attempt)
        if attempt.verdict == "pass" and stop_at_first:
            break
    result.best, result.selection = pick_best(result.attempts)
    if result.best is None:
        result.reason = "no proposal passed the judge: " + "; ".join(
            f"{a.proposal.family} ({a.reasons[0] if a.reasons else a.verdict})" for a in result.attempts)
    return result

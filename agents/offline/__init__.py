"""The offline engine: our own parametrised Triton starter kernels, matched to a
reference through the sandbox's analysis of it and judged like any candidate.
No LLM involved; results carry the label "offline engine (no LLM)"."""

from .engine import LABEL, Attempt, JudgeLike, OfflineEngine, OfflineResult, Plan, Proposal, plan_reference, run_offline
from .match import Match, MatchReport, match, match_report

__all__ = ["LABEL", "Attempt", "JudgeLike", "Match", "MatchReport", "OfflineEngine", "OfflineResult", "Plan",
           "Proposal", "match", "match_report", "plan_reference", "run_offline"]

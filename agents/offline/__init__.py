"""The offline engine: our own parametrised Triton starter kernels, matched to a
reference through the sandbox's analysis of it and judged like any candidate.
No LLM involved; results carry the label "offline engine (no LLM)"."""

from .engine import LABEL, Attempt, JudgeLike, OfflineEngine, OfflineResult, Proposal, run_offline
from .match import Match, MatchReport, match, match_report

__all__ = ["LABEL", "Attempt", "JudgeLike", "Match", "MatchReport", "OfflineEngine", "OfflineResult", "Proposal",
           "match", "match_report", "run_offline"]

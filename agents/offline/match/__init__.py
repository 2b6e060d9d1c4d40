"""Which family of starter kernels fits a reference: ``dispatch`` tries the
families best-first; each family's matcher (``conv``, ``norm``, ``pipeline``,
``layers``) reads the graph through the DAG helpers they share (``dag``) and the
numeric recogniser of norms written out op by op (``fingerprint``); ``types`` says
what a match is."""

from .dispatch import match, match_report
from .types import FLOATS, Match, MatchReport, NoMatch

__all__ = ["FLOATS", "Match", "MatchReport", "NoMatch", "match", "match_report"]

"""How much to trust a strategy, from its evidence.

Each piece of evidence scores an outcome in [0, 1]: a failure 0; a pass whose
speed was not measured (no GPU) 0.6; a measured pass 0.5 + 0.5 * log2(speedup),
clipped, so 1x is 0.5, 2x or better is 1 and 0.5x or worse is 0. Outcomes are
averaged with a prior (by source) worth ``PRIOR_WEIGHT`` observations, each
weighted by its age (half-life) and by whether it was measured on the
architecture asked about: evidence from another GPU counts half, and when none
is from this one the result is scaled down until it is re-validated here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .model import Evidence, Strategy

PRIORS = {"seed": 0.6, "learned:llm": 0.5, "learned:offline": 0.5}
PRIOR_WEIGHT = 2.0
OTHER_ARCH_WEIGHT = 0.5
REVALIDATE = 0.85
DAY = 86400.0


@dataclass(frozen=True)
class ConfidencePolicy:
    half_life_days: float = 90.0
    prior_weight: float = PRIOR_WEIGHT
    other_arch_weight: float = OTHER_ARCH_WEIGHT
    revalidate: float = REVALIDATE


def outcome(e: Evidence) -> float:
    if e.verdict != "pass":
        return 0.0
    if e.speedup is None:
        return 0.6
    return min(1.0, max(0.0, 0.5 + 0.5 * math.log2(max(e.speedup, 1e-6))))


def confidence(strategy: Strategy, now: float, arch: str | None = None,
               policy: ConfidencePolicy = ConfidencePolicy()) -> float:
    prior = PRIORS.get(strategy.source, 0.5)
    total, weight = prior * policy.prior_weight, policy.prior_weight
    for e in strategy.evidence:
        w = 0.5 ** (max(0.0, now - e.at) / (policy.half_life_days * DAY))
        if arch and e.arch != arch:
            w *= policy.other_arch_weight
        total += w * outcome(e)
        weight += w
    value = total / weight
    if arch and strategy.evidence and all(e.arch != arch for e in strategy.evidence):
        value *= policy.revalidate
    return round(value, 4)


def needs_revalidation(strategy: Strategy, arch: str | None) -> bool:
    return bool(arch and strategy.evidence and all(e.arch != arch for e in strategy.evidence))


def evidence_summary(strategy: Strategy, arch: str | None = None) -> str:
    """One line for the planner: "3 runs on 2 problems: 2 passed, mean speedup 1.40x (best 1.9x on
    19_matmul), 1 regression; measured on sm_80 only: re-validate on sm_90"."""
    ev = strategy.evidence
    if not ev:
        return "curated by the team; no runs yet" if strategy.source == "seed" else "no runs yet"
    passed = [e for e in ev if e.verdict == "pass"]
    measured = [e for e in passed if e.speedup is not None]
    problems = {e.problem for e in ev}
    parts = [f"{len(ev)} run{'s' * (len(ev) != 1)} on {len(problems)} problem{'s' * (len(problems) != 1)}: "
             f"{len(passed)} passed"]
    if measured:
        best = max(measured, key=lambda e: e.speedup or 0.0)
        mean = sum(e.speedup or 0.0 for e in measured) / len(measured)
        parts.append(f"mean speedup {mean:.2f}x (best {best.speedup:.2f}x on {best.problem})")
    elif passed:
        parts.append("speed not measured (no GPU)")
    roofed = [e for e in passed if e.fraction is not None]
    if roofed:
        top = max(roofed, key=lambda e: e.fraction or 0.0)
        parts.append(f"at best {top.fraction:.0%} of the machine's roofline bound (on {top.problem}): "
                     + ("little headroom left" if (top.fraction or 0.0) >= 0.8 else "headroom left"))
    regressions = sum(e.regression for e in ev)
    if regressions:
        parts.append(f"{regressions} regression{'s' * (regressions != 1)} (slower than eager)")
    failed = len(ev) - len(passed)
    if failed:
        parts.append(f"{failed} failed")
    text = ", ".join(parts)
    if needs_revalidation(strategy, arch):
        archs = ", ".join(sorted({e.arch for e in ev}))
        text += f"; measured on {archs} only: re-validate on {arch}"
    return text

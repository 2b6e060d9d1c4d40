"""The verifier: runs the judge on every candidate, adds an LLM review for
what the judge cannot see, and turns both into feedback for the next round."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sandbox.verdict import check_list, roofline

from ..context import Context, Evaluator
from ..cpu_profile import describe_timing
from ..prompting import FormatError, json_block, render, variant
from ..providers import Completion, Provider

# Checks whose details help a coder most, in the order a coder should read them.
_FEEDBACK_ORDER = check_list.FEEDBACK_ORDER


@dataclass
class Verification:
    verdict: str
    reasons: list[str]
    checks: dict[str, str]
    details: dict[str, str]
    speedup: float | None
    timing: dict[str, Any]
    review: dict[str, Any] = field(default_factory=dict)
    review_call: Completion | None = None
    cost: dict[str, Any] = field(default_factory=dict)  # the judge's seconds by phase (sandbox/cost.py)
    roofline: dict[str, Any] = field(default_factory=dict)  # each party's fraction of the machine's bound

    def feedback(self) -> str:
        """Concrete, ordered feedback for the coder's next prompt."""
        lines = []
        for name in _FEEDBACK_ORDER:
            if self.checks.get(name) == "fail":
                lines.append(f"- {name}: {self.details.get(name, '')}")
        for reason in self.reasons:
            if not any(reason.startswith(f"{n}:") for n in _FEEDBACK_ORDER):
                lines.append(f"- {reason}")
        if self.review.get("concerns"):
            lines.append("- reviewer: " + "; ".join(map(str, self.review["concerns"])))
        timing = self.timing.get("candidate")
        if self.timing.get("speedup_vs_eager"):  # native C on the CPU: real speedups (and counters)
            lines.append(f"- timing: {describe_timing(self.timing)} ({self.timing.get('label', '')})")
        elif timing:
            lines.append(f"- timing: median {timing['median_ms']:.4f} ms ({self.timing.get('label', '')})")
        if roofline.describe(self.roofline):
            lines.append(f"- roofline: {roofline.describe(self.roofline)}")
        if self.review.get("advice"):
            lines.append(f"- advice: {self.review['advice']}")
        return "\n".join(lines) or "- (no details)"


class Verifier:
    def __init__(self, evaluator: Evaluator, options: Any, provider: Provider | None = None) -> None:
        self.evaluator = evaluator
        self.options = options
        self.provider = provider

    def verify(self, ctx: Context, code: str, name: str, review: bool = True) -> Verification:
        """Judge ``code``; review it with the model too when ``review`` (LLM-written code)."""
        result = self.evaluator.evaluate(ctx.reference, code, ctx.reference_name, name, self.options).to_json()
        v = Verification(result["verdict"], list(result["reasons"]), result["checks"], result["check_details"],
                         result["speedup"], result.get("timing", {}), cost=dict(result.get("cost") or {}),
                         roofline=dict(result.get("roofline") or {}))
        if review and v.verdict == "pass" and self.provider is not None:
            self._review(ctx, code, v)
        return v

    def _review(self, ctx: Context, code: str, v: Verification) -> None:
        summary = f"all {len(v.checks)} checks passed; " + (
            (describe_timing(v.timing) or f"speedup {v.speedup:.2f}x") if v.timing.get("speedup_vs_eager") else
            f"speedup {v.speedup:.2f}x" if v.speedup is not None else "no GPU timing")
        prompt = render("verifier", reference=ctx.reference, code=code, summary=summary)
        reply = self.provider.complete(render(variant("system_verifier", ctx.backend)), [{"role": "user", "content": prompt}])
        v.review_call = reply
        try:
            review = json_block(reply.text)
        except FormatError as exc:
            v.review = {"verdict": "approve", "concerns": [], "advice": "", "note": f"review unreadable: {exc}"}
            return
        v.review = {"verdict": str(review.get("verdict", "approve")).lower(),
                    "concerns": [str(c) for c in review.get("concerns", []) or []],
                    "advice": str(review.get("advice", ""))}
        if v.review["verdict"] == "reject":
            v.verdict = "fail"
            v.reasons.append("review: " + ("; ".join(v.review["concerns"]) or "rejected by the reviewer"))
            v.speedup = None

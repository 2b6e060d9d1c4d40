"""The planner: turns the reference, its profile, the hardware, the attempts
so far and retrieved strategies into an ordered list of strategies."""

from __future__ import annotations

from typing import Any

from sandbox.verdict import roofline

from ..context import Context
from ..prompting import FormatError, json_block, render, variant
from ..providers import Completion, Provider
from ..trajectory import Attempt


class Planner:
    def __init__(self, provider: Provider) -> None:
        self.provider = provider

    def prompt(self, ctx: Context, attempts: list[Attempt], count: int, stagnated: bool) -> str:
        return render(
            "planner", reference_name=ctx.reference_name, reference=ctx.reference, inputs=ctx.describe_inputs(),
            outputs=ctx.describe_outputs(), parameters=ctx.describe_parameters(), device=ctx.device,
            profile=ctx.describe_profile(), backend=ctx.backend, hardware=ctx.hardware,
            strategies=ctx.describe_strategies(), attempts=describe_attempts(attempts), count=count,
            stagnation=("The last rounds did not improve on the best kernel. Propose different approaches, "
                        "not variations of the ones tried.\n") if stagnated else "",
        )

    def plan(self, ctx: Context, attempts: list[Attempt], count: int,
             stagnated: bool = False) -> tuple[list[dict[str, Any]], list[Completion]]:
        """Ordered strategies; one retry when the reply is malformed."""
        prompt = self.prompt(ctx, attempts, count, stagnated)
        messages = [{"role": "user", "content": prompt}]
        calls = []
        for _ in range(2):
            reply = self.provider.complete(render(variant("system_planner", ctx.backend)), messages)
            calls.append(reply)
            try:
                return parse_plan(reply.text), calls
            except FormatError as exc:
                messages += [{"role": "assistant", "content": reply.text},
                             {"role": "user", "content": f"{exc}. Answer again with only the ```json block."}]
        return [{"title": "direct kernel", "rationale": "the planner's replies did not parse",
                 "steps": "Implement the whole forward pass as one kernel."}], calls


def parse_plan(text: str) -> list[dict[str, Any]]:
    data = json_block(text)
    items = data.get("strategies")
    if not isinstance(items, list) or not items:
        raise FormatError("the JSON object has no non-empty `strategies` list")
    plan = []
    for item in items:
        if not isinstance(item, dict) or not item.get("title"):
            raise FormatError("every strategy needs a `title`")
        plan.append({"title": str(item["title"]), "rationale": str(item.get("rationale", "")),
                     "steps": str(item.get("steps", ""))})
    return plan


def describe_attempts(attempts: list[Attempt]) -> str:
    if not attempts:
        return "(none yet)"
    lines = []
    for a in attempts[-12:]:
        result = f"{a.verdict}" + (f", speedup {a.speedup:.2f}x" if a.speedup is not None else "")
        kernel = (a.roofline.get("parties") or {}).get("kernel")
        if kernel:  # the headroom: how far this kernel is from the machine's floor for the problem
            result += f", {kernel['fraction']:.0%} of the {a.roofline['bound_by']}-bound floor"
        why = f" — {a.reasons[0][:200]}" if a.reasons else ""
        lines.append(f"- {a.id} [{a.source}] {a.strategy}: {result}{why}")
    floor = next((roofline.describe(a.roofline) for a in reversed(attempts) if a.roofline.get("parties")), "")
    if floor:
        lines.append(f"Against this machine's ceilings (the last judged attempt): {floor}")
    return "\n".join(lines)

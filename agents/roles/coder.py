"""The coder: writes a complete candidate for one plan step, and repairs it
from the judge's feedback (compiler errors, correctness diffs) in the same
conversation, so the model sees its own code and what went wrong."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..context import Context
from ..prompting import FormatError, code_block, render, variant
from ..providers import Completion, Message, Provider


@dataclass
class Draft:
    code: str | None
    completion: Completion
    prompt: str
    messages: list[Message] = field(default_factory=list)
    error: str | None = None


class Coder:
    def __init__(self, provider: Provider) -> None:
        self.provider = provider

    def write(self, ctx: Context, strategy: dict[str, Any], parent_code: str | None) -> Draft:
        parent = ""
        if parent_code:
            parent = f"Start from this verified kernel and improve it:\n\n```python\n{parent_code}```\n"
        prompt = render("coder", reference_name=ctx.reference_name, reference=ctx.reference,
                        inputs=ctx.describe_inputs(), parameters=ctx.describe_parameters(),
                        title=strategy.get("title", ""), rationale=strategy.get("rationale", ""),
                        steps=strategy.get("steps", ""), parent=parent)
        return self._ask(ctx, [{"role": "user", "content": prompt}], prompt)

    def repair(self, ctx: Context, draft: Draft, code: str, feedback: str) -> Draft:
        prompt = render("repair", code=code, feedback=feedback)
        messages = [*draft.messages, {"role": "assistant", "content": draft.completion.text},
                    {"role": "user", "content": prompt}]
        return self._ask(ctx, messages, prompt)

    def speed_up(self, ctx: Context, draft: Draft, code: str, feedback: str) -> Draft:
        """The candidate passed every check but is no faster than eager: ask for speed."""
        prompt = render("faster", code=code, feedback=feedback)
        messages = [*draft.messages, {"role": "assistant", "content": draft.completion.text},
                    {"role": "user", "content": prompt}]
        return self._ask(ctx, messages, prompt)

    def _ask(self, ctx: Context, messages: list[Message], prompt: str) -> Draft:
        system = render(variant("system_coder", ctx.backend), backend=ctx.backend)
        reply = self.provider.complete(system, messages, max_tokens=8192)
        try:
            return Draft(code_block(reply.text), reply, prompt, messages)
        except FormatError as exc:
            return Draft(None, reply, prompt, messages, error=str(exc))

"""A scripted model that answers by role, so replies do not depend on the
order in which parallel calls arrive; coder replies are slowed down so that a
test can kill a worker between candidates."""

from __future__ import annotations

from tests.agents.search import scripted
from tests.fakes.llm_server import FakeLLMServer, Reply

PLAN = ('```json\n{"strategies": [{"title": "fused kernel A", "rationale": "r", "steps": "s"}, '
        '{"title": "fused kernel B", "rationale": "r", "steps": "s"}, '
        '{"title": "fused kernel C", "rationale": "r", "steps": "s"}]}\n```')


def responder(coder_delay_s: float):
    def answer(request) -> Reply:
        text = request.prompt_text
        if "You are the planner" in text:
            return Reply(PLAN)
        if "You are the reviewer" in text:
            return Reply(scripted.REVIEW)
        return Reply(scripted.CODER_FIXED, delay_s=coder_delay_s)

    return answer


def server(coder_delay_s: float = 1.5) -> FakeLLMServer:
    return FakeLLMServer(responder=responder(coder_delay_s))

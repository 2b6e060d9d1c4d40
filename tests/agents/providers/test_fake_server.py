"""The loopback LLM server itself: the SDKs must see it as the real services."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from agents.providers import make_provider
from tests.conftest import ROOT
from tests.fakes.llm_server import FakeLLMServer, RecordedRequest, Reply

USER: list[Any] = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("status", "openai_error", "anthropic_error"),
    [
        (400, openai.BadRequestError, anthropic.BadRequestError),
        (401, openai.AuthenticationError, anthropic.AuthenticationError),
        (404, openai.NotFoundError, anthropic.NotFoundError),
        (429, openai.RateLimitError, anthropic.RateLimitError),
        (500, openai.InternalServerError, anthropic.InternalServerError),
        (503, openai.InternalServerError, anthropic.InternalServerError),
    ],
)
def test_error_replies_raise_the_sdks_own_exceptions(
    status: int, openai_error: type[openai.APIStatusError], anthropic_error: type[anthropic.APIStatusError]
) -> None:
    with FakeLLMServer() as srv:
        srv.queue(Reply("scripted failure", status=status, headers={"retry-after": "1"}), api="openai")
        srv.queue(Reply("scripted failure", status=status), api="anthropic")
        oai = openai.OpenAI(api_key="k", base_url=srv.openai_base_url, max_retries=0)
        with pytest.raises(openai_error) as info:
            oai.chat.completions.create(model="m", messages=USER)
        assert info.value.response.headers["retry-after"] == "1"
        assert "scripted failure" in str(info.value)
        ant = anthropic.Anthropic(api_key="k", base_url=srv.anthropic_base_url, max_retries=0)
        with pytest.raises(anthropic_error, match="scripted failure"):
            ant.messages.create(model="m", max_tokens=5, messages=USER)


def test_models_endpoint_lists_the_configured_models() -> None:
    with FakeLLMServer(models=("qwen2.5-coder", "llama3")) as srv:
        client = openai.OpenAI(api_key="k", base_url=srv.openai_base_url, max_retries=0)
        assert [m.id for m in client.models.list()] == ["qwen2.5-coder", "llama3"]


def test_reply_can_override_model_and_token_counts() -> None:
    with FakeLLMServer([Reply("x", model="gpt-4o-2024-08-06", input_tokens=1000, output_tokens=10)]) as srv:
        result = make_provider("openai", model="gpt-4o", base_url=srv.openai_base_url).complete("s", USER)
    assert (result.model, result.input_tokens, result.output_tokens) == ("gpt-4o-2024-08-06", 1000, 10)


def test_responder_sees_the_prompt_so_replies_can_depend_on_it() -> None:
    def responder(request: RecordedRequest) -> Reply:
        return Reply("fixed the error" if "CompilationError" in request.prompt_text else "first try")

    with FakeLLMServer(responder=responder) as srv:
        provider = make_provider("anthropic", base_url=srv.anthropic_base_url)
        assert provider.complete("s", USER).text == "first try"
        feedback = [
            *USER,
            {"role": "assistant", "content": "first try"},
            {"role": "user", "content": "CompilationError"},
        ]
        assert provider.complete("s", feedback).text == "fixed the error"
        assert "CompilationError" in srv.requests[-1].prompt_text


def test_an_exhausted_script_answers_400_so_tests_fail_fast() -> None:
    with FakeLLMServer() as srv:
        client = openai.OpenAI(api_key="k", base_url=srv.openai_base_url, max_retries=0)
        with pytest.raises(openai.BadRequestError, match="no scripted reply left"):
            client.chat.completions.create(model="m", messages=USER)


def test_runs_as_a_process_from_a_jsonl_script(tmp_path: Path) -> None:
    script = tmp_path / "replies.jsonl"
    script.write_text(
        "\n".join(
            [
                json.dumps({"status": 503}),
                json.dumps({"text": "kernel v1", "api": "openai"}),
                "# comments and blank lines are skipped",
                "",
            ]
        )
    )
    seen = tmp_path / "seen.jsonl"
    cmd = [sys.executable, "-m", "tests.fakes.llm_server", "--port", "0", "--script", str(script)]
    proc = subprocess.Popen([*cmd, "--requests-log", str(seen)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        provider = make_provider("openai", base_url=f"http://127.0.0.1:{port}/v1", base_delay_s=0.01)
        assert provider.complete("s", USER).text == "kernel v1"
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
    logged = [json.loads(line) for line in seen.read_text().splitlines()]
    assert [entry["path"] for entry in logged] == ["/v1/chat/completions"] * 2
    assert logged[0]["body"]["messages"][-1] == USER[0]

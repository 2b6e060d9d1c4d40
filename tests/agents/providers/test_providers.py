"""Providers end to end: the real openai / anthropic / google-genai SDK clients against our loopback server.

Nothing in either SDK is patched; retries, time-outs and error mapping are
exercised over real HTTP with short delays so the file stays fast.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agents.providers import (
    Completion,
    Provider,
    ProviderConfigError,
    ProviderError,
    ProviderUnavailable,
    cost_usd,
    make_provider,
)
from tests.fakes.llm_server import FakeLLMServer, Reply

KEY = "sk-test-Zq8vN3kP0rT5wX2y"
MODELS = {"openai": "gpt-4.1", "anthropic": "claude-sonnet-4-6", "gemini": "gemini-2.5-pro"}
PROVIDERS = list(MODELS)
FAST: dict[str, Any] = {"base_delay_s": 0.01, "max_delay_s": 0.05}
USER = [{"role": "user", "content": "write a fused softmax kernel"}]


@pytest.fixture
def srv() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _no_ambient_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys or base URLs in the developer's shell must not change what these tests see."""
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_BASE_URL",
                 "ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def build(kind: str, srv: FakeLLMServer, **kw: Any) -> Provider:
    base_url = {"openai": srv.openai_base_url, "anthropic": srv.anthropic_base_url, "gemini": srv.gemini_base_url}[kind]
    return make_provider(kind, model=MODELS[kind], base_url=base_url, api_key=KEY, **{**FAST, **kw})


@pytest.mark.parametrize("kind", PROVIDERS)
def test_completion_reports_text_tokens_cost_and_latency(kind: str, srv: FakeLLMServer) -> None:
    srv.queue(Reply("def kernel(): pass"))
    result = build(kind, srv).complete("you write triton", USER)

    assert isinstance(result, Completion)
    assert result.text == "def kernel(): pass"
    assert (result.provider, result.model) == (kind, MODELS[kind])
    # The fake counts words: system (3) + user (5) in, reply (3) out.
    assert (result.input_tokens, result.output_tokens) == (8, 3)
    assert result.cost_usd == pytest.approx(cost_usd(MODELS[kind], 8, 3)) and result.cost_usd > 0
    assert result.latency_s > 0


def test_openai_request_carries_system_prompt_first(srv: FakeLLMServer) -> None:
    srv.queue(Reply("ok"))
    build("openai", srv).complete("SYSTEM", USER, max_tokens=77, temperature=0.5)
    body = srv.requests[0].body
    assert body["model"] == "gpt-4.1"
    assert body["messages"] == [{"role": "system", "content": "SYSTEM"}, *USER]
    # A compatible server gets the parameter names every server understands.
    assert (body["max_tokens"], body["temperature"]) == (77, 0.5)


def test_anthropic_request_has_top_level_system_and_no_sampling_parameters(srv: FakeLLMServer) -> None:
    srv.queue(Reply("ok"))
    build("anthropic", srv).complete("SYSTEM", USER, max_tokens=77)
    body = srv.requests[0].body
    assert (body["system"], body["messages"], body["max_tokens"]) == ("SYSTEM", USER, 77)
    assert "temperature" not in body  # API version 2026-10-21 rejects it


def test_official_openai_parameters_depend_on_model_family(srv: FakeLLMServer) -> None:
    srv.queue(Reply("a"), Reply("b"))
    for model in ("gpt-5.4", "gpt-4.1"):
        make_provider("openai", model=model, base_url=srv.openai_base_url, api_key=KEY, official_api=True).complete(
            "s", USER, max_tokens=10
        )
    reasoning, chat = (r.body for r in srv.requests)
    assert reasoning["max_completion_tokens"] == 10 and "temperature" not in reasoning
    assert chat["max_completion_tokens"] == 10 and chat["temperature"] == 0.2


def test_gemini_request_names_the_model_in_the_path_and_the_assistant_model(srv: FakeLLMServer) -> None:
    srv.queue(Reply("ok"))
    turns = [*USER, {"role": "assistant", "content": "here it is"}, {"role": "user", "content": "faster"}]
    build("gemini", srv).complete("you write triton", turns, max_tokens=321, temperature=0.4)
    request = srv.requests[0]
    assert request.path == "/v1beta/models/gemini-2.5-pro:generateContent" and request.model == "gemini-2.5-pro"
    body = request.body
    assert [(c["role"], c["parts"][0]["text"]) for c in body["contents"]] == [
        ("user", USER[0]["content"]), ("model", "here it is"), ("user", "faster")]
    assert body["systemInstruction"]["parts"][0]["text"] == "you write triton"
    assert body["generationConfig"] == {"maxOutputTokens": 321, "temperature": 0.4}


def test_base_urls_route_each_sdk_to_its_endpoint(srv: FakeLLMServer) -> None:
    srv.queue(Reply("from anthropic queue"), api="anthropic")
    srv.queue(Reply("from gemini queue"), api="gemini")
    srv.queue(Reply("from openai queue"), api="openai")
    assert build("openai", srv).complete("s", USER).text == "from openai queue"
    assert build("anthropic", srv).complete("s", USER).text == "from anthropic queue"
    assert build("gemini", srv).complete("s", USER).text == "from gemini queue"
    assert [(r.api, r.path) for r in srv.requests] == [
        ("openai", "/v1/chat/completions"),
        ("anthropic", "/v1/messages"),
        ("gemini", "/v1beta/models/gemini-2.5-pro:generateContent"),
    ]


@pytest.mark.parametrize("kind", PROVIDERS)
def test_api_key_travels_in_the_auth_header(kind: str, srv: FakeLLMServer) -> None:
    srv.queue(Reply("ok"))
    build(kind, srv).complete("s", USER)
    headers = srv.requests[0].headers
    # OpenAI uses Bearer; Anthropic's SDK 2.x does too (x-api-key before that); Gemini x-goog-api-key.
    assert headers.get("authorization") == f"Bearer {KEY}" or headers.get("x-api-key") == KEY \
        or (kind == "gemini" and headers.get("x-goog-api-key") == KEY)


@pytest.mark.parametrize("kind", PROVIDERS)
def test_rate_limit_is_retried_after_the_servers_retry_after(kind: str, srv: FakeLLMServer) -> None:
    srv.queue(Reply(status=429, headers={"retry-after": "0.3"}), Reply("ok"))
    started = time.monotonic()
    assert build(kind, srv).complete("s", USER).text == "ok"
    assert time.monotonic() - started >= 0.3  # far above the 0.01 s base delay
    assert len(srv.requests) == 2


def test_long_retry_after_is_capped(srv: FakeLLMServer) -> None:
    srv.queue(Reply(status=429, headers={"retry-after": "30"}), Reply("ok"))
    started = time.monotonic()
    assert build("openai", srv, max_retry_after_s=0.2).complete("s", USER).text == "ok"
    assert 0.2 <= time.monotonic() - started < 5


@pytest.mark.parametrize("kind", PROVIDERS)
def test_server_errors_are_retried(kind: str, srv: FakeLLMServer) -> None:
    srv.queue(Reply(status=500), Reply(status=503), Reply("recovered"))
    assert build(kind, srv).complete("s", USER).text == "recovered"
    assert len(srv.requests) == 3


@pytest.mark.parametrize("kind", PROVIDERS)
def test_authentication_failure_is_not_retried_and_hides_the_key(kind: str, srv: FakeLLMServer) -> None:
    srv.queue(Reply(f"Incorrect API key provided: {KEY}", status=401), Reply("never served"))
    with pytest.raises(ProviderError) as info:
        build(kind, srv).complete("s", USER)
    assert not isinstance(info.value, ProviderUnavailable)
    assert str(info.value).startswith(f"authentication failed for provider {kind} (HTTP 401)")
    assert info.value.status_code == 401
    assert KEY not in str(info.value) and KEY[:10] not in str(info.value)
    assert len(srv.requests) == 1


@pytest.mark.parametrize("kind", PROVIDERS)
@pytest.mark.parametrize(("status", "words"), [(400, "request rejected"), (404, "not found")])
def test_other_client_errors_fail_at_once_with_the_servers_reason(kind: str, status: int, words: str,
                                                                   srv: FakeLLMServer) -> None:
    srv.queue(Reply(f"bad thing, see key {KEY}", status=status), Reply("never served"))
    with pytest.raises(ProviderError) as info:
        build(kind, srv).complete("s", USER)
    message = str(info.value)
    assert words in message and f"HTTP {status}" in message and "bad thing" in message
    assert KEY not in message
    assert len(srv.requests) == 1


@pytest.mark.parametrize("kind", PROVIDERS)
def test_exhausted_retries_raise_unavailable_with_last_status(kind: str, srv: FakeLLMServer) -> None:
    srv.queue(*[Reply(status=503)] * 3)
    with pytest.raises(ProviderUnavailable) as info:
        build(kind, srv, max_retries=2).complete("s", USER)
    assert (info.value.status_code, info.value.attempts) == (503, 3)
    assert "HTTP 503" in str(info.value)
    assert len(srv.requests) == 3


@pytest.mark.parametrize("kind", PROVIDERS)
def test_timeout_is_retried(kind: str, srv: FakeLLMServer) -> None:
    srv.queue(Reply("too late", delay_s=1.0), Reply("in time"))
    assert build(kind, srv, timeout=0.25, max_retries=1).complete("s", USER).text == "in time"
    assert len(srv.requests) == 2


@pytest.mark.parametrize("kind", PROVIDERS)
def test_timeouts_exhaust_into_unavailable(kind: str, srv: FakeLLMServer) -> None:
    srv.queue(Reply("late", delay_s=1.0), Reply("late", delay_s=1.0))
    with pytest.raises(ProviderUnavailable) as info:
        build(kind, srv, timeout=0.25, max_retries=1).complete("s", USER)
    assert info.value.status_code is None and "timed out" in str(info.value)


@pytest.mark.parametrize("kind", PROVIDERS)
def test_connection_refused_is_retried_then_unavailable(kind: str) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = make_provider(kind, base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, **FAST)
    with pytest.raises(ProviderUnavailable) as info:
        provider.complete("s", USER)
    assert info.value.attempts == 2 and "connection error" in str(info.value)


def test_key_never_reaches_logs_and_prompts_stay_out_of_info(
    srv: FakeLLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secret_prompt = "PROPRIETARY-KERNEL-SOURCE"
    srv.queue(
        Reply(status=429, headers={"retry-after": "0"}),
        Reply("ok"),
        Reply(f"Incorrect API key provided: {KEY}", status=401),
        Reply("late", delay_s=1.0),
        Reply(status=500),
    )
    for kind in PROVIDERS:
        provider = build(kind, srv, timeout=0.25, max_retries=1)
        for _ in range(2):
            try:
                provider.complete("s", [{"role": "user", "content": secret_prompt}])
            except ProviderError:
                pass
    assert srv.pending() == 0
    assert any(r.name.startswith(("openai", "anthropic", "httpx")) for r in caplog.records)  # SDK logs included
    assert KEY not in caplog.text
    assert all(KEY not in str(record.args) for record in caplog.records)
    ours = [r for r in caplog.records if r.name.startswith("agents") and r.levelno >= logging.INFO]
    assert ours and all(secret_prompt not in r.getMessage() for r in ours)


@pytest.mark.parametrize(("kind", "env"), [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY"),
                                           ("gemini", "GEMINI_API_KEY")])
def test_missing_key_without_base_url_is_a_config_error(kind: str, env: str) -> None:
    with pytest.raises(ProviderConfigError, match=env):
        make_provider(kind)


def test_key_is_read_from_the_environment(srv: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    srv.queue(Reply("ok"))
    make_provider("openai", base_url=srv.openai_base_url).complete("s", USER)
    assert srv.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_openai_compatible_server_needs_no_key(srv: FakeLLMServer) -> None:
    srv.queue(Reply("local answer"))
    provider = make_provider("openai", model="qwen2.5-coder:32b", base_url=srv.openai_base_url)
    result = provider.complete("s", USER)
    assert result.text == "local answer"
    assert result.cost_usd == 0.0  # unpriced local model
    assert srv.requests[0].headers["authorization"] == "Bearer not-needed"


def test_unknown_provider_lists_valid_names() -> None:
    with pytest.raises(ProviderConfigError, match="openai, anthropic, gemini"):
        make_provider("cohere")


def test_price_table_override_reaches_the_completion(srv: FakeLLMServer) -> None:
    srv.queue(Reply("one two"))
    provider = make_provider(
        "openai", model="my-vllm-model", base_url=srv.openai_base_url, prices={"my-vllm-model": [1.0, 2.0]}
    )
    result = provider.complete("s", USER)
    assert result.cost_usd == pytest.approx((6 * 1.0 + 2 * 2.0) / 1e6)


def test_repr_never_shows_the_key(srv: FakeLLMServer) -> None:
    for kind in PROVIDERS:
        assert KEY not in repr(build(kind, srv))


@pytest.mark.parametrize("kind", PROVIDERS)
def test_a_base_url_that_is_not_an_llm_api_gets_a_clear_error(kind: str, srv: FakeLLMServer) -> None:
    srv.queue(Reply(raw="<html>LM Studio</html>"))
    with pytest.raises(ProviderError, match="unexpected reply .* check the base URL"):
        build(kind, srv).complete("s", USER)
    assert len(srv.requests) == 1

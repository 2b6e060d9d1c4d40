"""Google's Gemini API (generateContent) through the official `google-genai` SDK.

`base_url` is the API root (the SDK appends /v1beta/models/<model>:generateContent):
a proxy, a gateway, or our loopback test server. The SDK sends the key as
`x-goog-api-key`. Its own retries are off (no `retry_options`): ours apply.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from agents.providers.base import Completion, Message
from agents.providers.calls import RawReply, SdkProvider, check_messages
from agents.providers.errors import redact, unexpected_reply
from agents.providers.retry import Failure, parse_retry_after

KEY_ENV = "GEMINI_API_KEY"
_MAX_DETAIL = 300


def _transport_errors() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """(time-outs, other failures to get an answer) of the HTTP clients the SDK may use:
    httpx, or httpx2 where it is installed; the SDK lets them through unwrapped."""
    timeouts: list[type[Exception]] = []
    transport: list[type[Exception]] = []
    for name in ("httpx", "httpx2"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        timeouts.append(module.TimeoutException)
        transport.append(module.TransportError)
    return tuple(timeouts), tuple(transport)


_TIMEOUTS, _TRANSPORT = _transport_errors()


class GeminiProvider(SdkProvider):
    """Gemini models with our retry policy."""

    name, key_env, sdk, sdk_error = "gemini", KEY_ENV, genai, genai_errors.APIError
    missing_key = f"no API key for provider gemini: set {KEY_ENV}"

    def make_client(self, key: str, base_url: str | None, timeout: float) -> genai.Client:
        options = types.HttpOptions(base_url=base_url, api_version="v1beta", timeout=int(timeout * 1000))  # ms
        return genai.Client(api_key=key, http_options=options)

    def complete(
        self, system: str, messages: list[Message], *, max_tokens: int = 4096, temperature: float = 0.2
    ) -> Completion:
        """One generateContent call; retried on rate limits, 5xx and time-outs. The
        assistant's turns are the API's `model` role; the system prompt is its
        `system_instruction`."""
        check_messages(messages)
        request: dict[str, Any] = {
            "model": self.model,
            "contents": [types.Content(role="model" if m["role"] == "assistant" else "user",
                                       parts=[types.Part(text=m["content"])]) for m in messages],
            "config": types.GenerateContentConfig(system_instruction=system or None, max_output_tokens=max_tokens,
                                                  temperature=temperature),
        }
        return self.call(request, system, messages)

    def classify(self, exc: Exception) -> Failure | None:
        """The SDK raises APIError (ClientError 4xx, ServerError 5xx) with the server's status
        and message, and lets httpx's own errors through when no answer came."""
        if isinstance(exc, genai_errors.APIError):
            response = getattr(exc, "response", None)
            headers = dict(getattr(response, "headers", None) or {})
            detail = redact(str(exc.message or exc.status or ""), (self._key,))[:_MAX_DETAIL]
            return Failure(exc.code if isinstance(exc.code, int) else None, detail, parse_retry_after(headers),
                           final=not isinstance(exc.code, int))
        if isinstance(exc, _TIMEOUTS):
            return Failure(None, "timed out")
        if isinstance(exc, _TRANSPORT):
            return Failure(None, "connection error")
        return None

    def _send(self, request: dict[str, Any]) -> RawReply:
        try:
            response = self._client.models.generate_content(**request)
        except json.JSONDecodeError as exc:  # a 200 that is not JSON: not the API
            raise unexpected_reply(self.name, self.base_url, "a generateContent response") from exc
        if not isinstance(response, types.GenerateContentResponse):
            raise unexpected_reply(self.name, self.base_url, "a generateContent response")
        parts = (response.candidates[0].content.parts or []) if response.candidates and \
            response.candidates[0].content else []
        usage = response.usage_metadata
        return RawReply(
            text="".join(p.text for p in parts if p.text and not p.thought),
            model=response.model_version or self.model,
            input_tokens=(usage.prompt_token_count or 0) if usage else 0,
            output_tokens=(usage.candidates_token_count or 0) if usage else 0,
        )

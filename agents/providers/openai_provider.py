"""OpenAI, and any server that speaks its chat-completions API (vLLM, Ollama, llama.cpp, LM Studio).

A local server is reached by `base_url` (the URL the SDK takes, ending in /v1)
and often needs no key; the SDK insists on a string, so a placeholder is sent.
"""

from __future__ import annotations

from typing import Any

import openai
from openai.types.chat import ChatCompletion

from agents.providers.base import Completion, Message
from agents.providers.calls import RawReply, SdkProvider, check_messages
from agents.providers.errors import unexpected_reply

KEY_ENV = "OPENAI_API_KEY"
# OpenAI's reasoning models (o-series, gpt-5 and later) refuse `temperature`;
# only the older chat models are known to take it.
_TEMPERATURE_PREFIXES = ("gpt-4", "gpt-3.5", "chatgpt-")


class OpenAIProvider(SdkProvider):
    """Chat completions through the official `openai` SDK, with our retry policy."""

    name, key_env, sdk, sdk_error = "openai", KEY_ENV, openai, openai.OpenAIError
    missing_key = (f"no API key for provider openai: set {KEY_ENV}, or pass --base-url for a local "
                   "OpenAI-compatible server that needs none")

    def __init__(self, model: str, *args: Any, official_api: bool | None = None, **kwargs: Any) -> None:
        """The arguments of SdkProvider, and `official_api`: whether the server is OpenAI itself,
        which wants `max_completion_tokens` and refuses `temperature` on reasoning models; by
        default true without `base_url` or on api.openai.com."""
        super().__init__(model, *args, **kwargs)
        # Compatible servers know the older parameter names best.
        if official_api is None:
            official_api = self.base_url is None or "api.openai.com" in self.base_url
        self._official = official_api

    def make_client(self, key: str, base_url: str | None, timeout: float) -> openai.OpenAI:
        return openai.OpenAI(api_key=key, base_url=base_url, timeout=timeout, max_retries=0)

    def complete(
        self, system: str, messages: list[Message], *, max_tokens: int = 4096, temperature: float = 0.2
    ) -> Completion:
        """One chat completion; retried on rate limits, 5xx and time-outs.

        `temperature` is not sent to OpenAI's reasoning models, which reject it.
        """
        check_messages(messages)
        turns = [{"role": m["role"], "content": m["content"]} for m in messages]
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, *turns] if system else turns,
        }
        request["max_completion_tokens" if self._official else "max_tokens"] = max_tokens
        if not self._official or self.model.startswith(_TEMPERATURE_PREFIXES):
            request["temperature"] = temperature
        return self.call(request, system, messages)

    def _send(self, request: dict[str, Any]) -> RawReply:
        response = self._client.chat.completions.create(**request)
        if not isinstance(response, ChatCompletion):  # the SDK hands back non-JSON bodies as text
            raise unexpected_reply(self.name, self.base_url, "a chat completion")
        text = (response.choices[0].message.content or "") if response.choices else ""
        usage = response.usage
        return RawReply(
            text=text,
            model=response.model or self.model,
            input_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
        )

"""Anthropic's Messages API through the official `anthropic` SDK.

`base_url` is the API root (the SDK appends /v1/messages): a proxy, a gateway,
or our loopback test server. The SDK sends the key as `Authorization: Bearer`.
"""

from __future__ import annotations

from typing import Any

import anthropic
from anthropic.types import Message as AnthropicMessage

from agents.providers.base import Completion, Message
from agents.providers.calls import RawReply, SdkProvider, check_messages
from agents.providers.errors import unexpected_reply

KEY_ENV = "ANTHROPIC_API_KEY"


class AnthropicProvider(SdkProvider):
    """Claude models with our retry policy; the SDK's own retries are off."""

    name, key_env, sdk, sdk_error = "anthropic", KEY_ENV, anthropic, anthropic.AnthropicError
    missing_key = f"no API key for provider anthropic: set {KEY_ENV}"

    def make_client(self, key: str, base_url: str | None, timeout: float) -> anthropic.Anthropic:
        return anthropic.Anthropic(api_key=key, base_url=base_url, timeout=timeout, max_retries=0)

    def complete(
        self, system: str, messages: list[Message], *, max_tokens: int = 4096, temperature: float = 0.2
    ) -> Completion:
        """One message; retried on rate limits, overload, 5xx and time-outs.

        `temperature` is accepted for the Protocol's sake and not sent: API
        version 2026-10-21 (the SDK's default) rejects sampling parameters.
        """
        check_messages(messages)
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "max_tokens": max_tokens,
        }
        if system:  # the API rejects an empty system block
            request["system"] = system
        return self.call(request, system, messages)

    def _send(self, request: dict[str, Any]) -> RawReply:
        response = self._client.messages.create(**request)
        if not isinstance(response, AnthropicMessage):  # the SDK hands back non-JSON bodies as text
            raise unexpected_reply(self.name, self.base_url, "a message")
        text = "".join(block.text for block in response.content if block.type == "text")
        return RawReply(
            text=text,
            model=response.model or self.model,
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
        )

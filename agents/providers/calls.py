"""The part of a model call that is the same for every vendor: retry, time, price, log.

Each provider supplies one attempt (`send`) that returns a `RawReply`; this
module turns it into a `Completion`, so latency, cost and the log line mean
the same thing whichever SDK produced them.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from agents.providers.base import Completion, Message, ProviderConfigError, ProviderError
from agents.providers.errors import failure_from_sdk, fatal_error
from agents.providers.pricing import Price, cost_usd, is_priced, parse_prices
from agents.providers.retry import Failure, RetryPolicy, call_with_retry

log = logging.getLogger("agents.providers")


@dataclass(frozen=True)
class RawReply:
    """What one successful attempt returned, before pricing."""

    text: str
    model: str
    input_tokens: int
    output_tokens: int


def check_messages(messages: list[Message]) -> None:
    """Reject turns the vendors would reject anyway, with a message that names the turn."""
    for index, message in enumerate(messages):
        if message.get("role") not in ("user", "assistant") or not isinstance(message.get("content"), str):
            raise ValueError(f"message {index} must be {{'role': 'user'|'assistant', 'content': str}}")


def run_call(
    send: Callable[[], RawReply],
    *,
    provider: str,
    model: str,
    policy: RetryPolicy,
    classify: Callable[[Exception], Failure | None],
    fatal: Callable[[Failure], ProviderError],
    prices: Mapping[str, Price] | None,
    prompt_chars: int,
) -> Completion:
    """Send with retries and describe the outcome; logs sizes and numbers, never prompt text."""
    log.debug("%s %s: sending %d prompt characters", provider, model, prompt_chars)
    started = time.monotonic()
    reply, attempts = call_with_retry(
        send, provider=provider, model=model, policy=policy, classify=classify, fatal=fatal
    )
    latency = time.monotonic() - started
    cost = cost_usd(reply.model, reply.input_tokens, reply.output_tokens, prices)
    log.info(
        "%s %s: %d input + %d output tokens, $%.6f%s, %.2f s, %d attempt(s)",
        provider,
        reply.model,
        reply.input_tokens,
        reply.output_tokens,
        cost,
        "" if is_priced(reply.model, prices) else " (unpriced model)",
        latency,
        attempts,
    )
    return Completion(
        text=reply.text,
        model=reply.model,
        input_tokens=reply.input_tokens,
        output_tokens=reply.output_tokens,
        cost_usd=cost,
        latency_s=latency,
        provider=provider,
    )


# The SDKs insist on a key string; a local server that needs none gets this.
PLACEHOLDER_KEY = "not-needed"


class SdkProvider:
    """What every SDK-backed provider holds besides its client -- model, base URL, key,
    prices, retry policy -- its constructor, and its retried, priced call (`call`). A
    subclass sets `name`, `key_env`, `missing_key` (the error's text with neither a key nor
    a base URL), `sdk` and `sdk_error`, and defines `make_client(key, base_url, timeout)`
    (the SDK's client, its own retries off) and `_send(request) -> RawReply` (one attempt);
    an SDK whose errors are not shaped like openai's and anthropic's also overrides
    `classify(exc)`."""

    name = ""
    key_env = ""
    missing_key = ""
    sdk: ModuleType
    sdk_error: type[Exception]

    def __init__(
        self,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 4,
        prices: Mapping[str, Any] | None = None,
        *,
        base_delay_s: float = 1.0,
        max_delay_s: float = 30.0,
        max_retry_after_s: float = 60.0,
    ) -> None:
        key = api_key or os.environ.get(self.key_env) or None
        if key is None and base_url is None:
            raise ProviderConfigError(self.missing_key, provider=self.name)
        self.model, self.base_url, self._key = model, base_url, key
        self._prices = parse_prices(prices) if prices else None
        self._policy = RetryPolicy(max_retries, base_delay_s, max_delay_s, max_retry_after_s)
        # An explicit key also stops an SDK from looking for profiles or other credentials on disk.
        self._client = self.make_client(key or PLACEHOLDER_KEY, base_url, timeout)

    def make_client(self, key: str, base_url: str | None, timeout: float) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def classify(self, exc: Exception) -> Failure | None:
        """One attempt's exception as a Failure (None: not the SDK's, a bug), the key scrubbed
        from anything the server said. This reads the openai / anthropic shape
        (APIStatusError, APIConnectionError, APITimeoutError)."""
        return failure_from_sdk(exc, status_error=self.sdk.APIStatusError, connection_error=self.sdk.APIConnectionError,
                                timeout_error=self.sdk.APITimeoutError, sdk_error=self.sdk_error, secrets=(self._key,))

    def call(self, request: dict[str, Any], system: str, messages: list[Message]) -> Completion:
        """`run_call` of one request: retried, timed, priced. On an auth failure the error names
        the key's variable (not with a base URL: a local server's key is the user's own)."""
        return run_call(
            functools.partial(self._send, request), provider=self.name, model=self.model, policy=self._policy,
            classify=self.classify,
            fatal=functools.partial(fatal_error, provider=self.name, model=self.model,
                                    key_hint=None if self.base_url else self.key_env),
            prices=self._prices, prompt_chars=len(system) + sum(len(m["content"]) for m in messages),
        )

    def _send(self, request: dict[str, Any]) -> RawReply:
        raise NotImplementedError

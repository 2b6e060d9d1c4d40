"""The one interface every LLM provider implements, and the errors it raises.

The agent loop only ever sees `Provider.complete` and these exceptions, so it can
be driven by a scripted model in tests and by any vendor in production without
knowing which SDK sits underneath.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

Message = dict[str, str]
"""One chat turn: {"role": "user" | "assistant", "content": "..."}.

The system prompt is not a message: both vendors treat it specially, so it is
passed to `complete` on its own.
"""


@dataclass(frozen=True)
class Completion:
    """What one call returned, with what it cost, for the trajectory and the budget."""

    text: str
    model: str
    input_tokens: int
    output_tokens: int
    cost_usd: float
    latency_s: float
    """Wall time of the whole call as the caller saw it, retries and back-off included."""
    provider: str


class Provider(Protocol):
    """A chat model behind one call; implementations own time-outs, retries and pricing."""

    name: str
    model: str

    def complete(
        self, system: str, messages: list[Message], *, max_tokens: int = 4096, temperature: float = 0.2
    ) -> Completion: ...


class ProviderError(Exception):
    """A failure worth showing to a user; the message never contains an API key."""

    def __init__(self, message: str, *, provider: str | None = None, status_code: int | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.status_code = status_code


class ProviderConfigError(ProviderError):
    """The provider cannot be built as asked: unknown name, missing key, bad price table."""


class ProviderUnavailable(ProviderError):
    """Every attempt failed transiently (rate limit, 5xx, time-out, connection).

    `status_code` is the last HTTP status seen, or None when the last attempt got
    no response at all; the caller may try again later or switch provider.
    """

    def __init__(
        self, message: str, *, provider: str | None = None, status_code: int | None = None, attempts: int = 0
    ) -> None:
        super().__init__(message, provider=provider, status_code=status_code)
        self.attempts = attempts

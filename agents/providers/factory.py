"""Build a provider from the names a user types (`--provider`, `--model`, `--base-url`).

The composition root (app/) calls this with values from settings; keys come
from the argument or the vendor's environment variable, never from a file we
write or a log we keep.
"""

from __future__ import annotations

from typing import Any

from agents.providers.anthropic_provider import AnthropicProvider
from agents.providers.base import Provider, ProviderConfigError
from agents.providers.calls import SdkProvider
from agents.providers.gemini_provider import GeminiProvider
from agents.providers.openai_provider import OpenAIProvider

# Current, priced, not deprecated (claude-sonnet-4-5 reaches end of life on 2026-11-30).
DEFAULT_MODELS: dict[str, str] = {
    "openai": "gpt-5.4",
    "anthropic": "claude-sonnet-4-6",
    "gemini": "gemini-2.5-pro",
}

_CLASSES: dict[str, type[SdkProvider]] = {
    "openai": OpenAIProvider,
    "anthropic": AnthropicProvider,
    "gemini": GeminiProvider,
}

PROVIDER_NAMES: tuple[str, ...] = tuple(_CLASSES)


def make_provider(
    name: str,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    **kw: Any,
) -> Provider:
    """A provider by name: "openai" (also any OpenAI-compatible server by base URL), "anthropic"
    or "gemini".

    `base_url` is what the SDK takes: for OpenAI-compatible servers the URL
    ending in /v1 (e.g. http://localhost:8000/v1 for vLLM, :11434/v1 for
    Ollama); for Anthropic the API root, to which the SDK appends /v1/messages; for
    Gemini the API root, to which the SDK appends /v1beta/models/<model>:generateContent.
    Other keywords (timeout, max_retries, prices, base_delay_s, ...) go to the
    provider's constructor.
    """
    key = name.strip().lower()
    cls = _CLASSES.get(key)
    if cls is None:
        raise ProviderConfigError(f"unknown provider {name!r}; valid names: {', '.join(PROVIDER_NAMES)}")
    return cls(model or DEFAULT_MODELS[key], api_key=api_key, base_url=base_url, **kw)

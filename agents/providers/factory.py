"""Build a provider from the names a user types (`--provider`, `--model`, `--base-url`).

The composition root (app/) calls this with values from settings; keys come
from the argument or the vendor's environment variable, never from a file we
write or a log we keep.
"""

from __future__ import annotations

import importlib
from typing import Any

from agents.providers.base import Provider, ProviderConfigError
from agents.providers.calls import SdkProvider

# Current, priced, not deprecated (claude-sonnet-4-5 reaches end of life on 2026-11-30).
DEFAULT_MODELS: dict[str, str] = {
    "openai": "gpt-5.4",
    "anthropic": "claude-sonnet-4-6",
    "gemini": "gemini-2.5-pro",
}

# name -> (module, class). Imported when a provider is made: the vendor SDKs take seconds to
# import (anthropic ~2.9 s, openai ~1.4 s here), which every CLI command, batch worker and
# offline search paid before it needed none of them.
_CLASSES: dict[str, tuple[str, str]] = {
    "openai": ("agents.providers.openai_provider", "OpenAIProvider"),
    "anthropic": ("agents.providers.anthropic_provider", "AnthropicProvider"),
    "gemini": ("agents.providers.gemini_provider", "GeminiProvider"),
}

PROVIDER_NAMES: tuple[str, ...] = tuple(_CLASSES)


def class_name(name: str) -> str:
    """The class name of a provider in PROVIDER_NAMES, without importing it."""
    return _CLASSES[name][1]


def provider_class(name: str) -> type[SdkProvider]:
    """The provider class of a name in PROVIDER_NAMES, its SDK imported now."""
    module, cls = _CLASSES[name]
    found: type[SdkProvider] = getattr(importlib.import_module(module), cls)
    return found


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
    if key not in _CLASSES:
        raise ProviderConfigError(f"unknown provider {name!r}; valid names: {', '.join(PROVIDER_NAMES)}")
    return provider_class(key)(model or DEFAULT_MODELS[key], api_key=api_key, base_url=base_url, **kw)

"""LLM providers behind one interface: OpenAI (and compatible servers), Anthropic and Gemini.

The provider classes (and their vendor SDKs) are imported on first use: ``make_provider``
imports the one asked for, and ``agents.providers.OpenAIProvider`` etc. import theirs."""

from typing import Any

from agents.providers.base import (
    Completion,
    Message,
    Provider,
    ProviderConfigError,
    ProviderError,
    ProviderUnavailable,
)
from agents.providers.factory import DEFAULT_MODELS, PROVIDER_NAMES, class_name, make_provider, provider_class
from agents.providers.pricing import DEFAULT_PRICES, Price, cost_usd, is_priced, parse_prices, price_for
from agents.providers.retry import RetryPolicy

__all__ = [
    "DEFAULT_MODELS",
    "DEFAULT_PRICES",
    "PROVIDER_NAMES",
    "AnthropicProvider",
    "Completion",
    "GeminiProvider",
    "Message",
    "OpenAIProvider",
    "Price",
    "Provider",
    "ProviderConfigError",
    "ProviderError",
    "ProviderUnavailable",
    "RetryPolicy",
    "cost_usd",
    "is_priced",
    "make_provider",
    "parse_prices",
    "price_for",
]

def __getattr__(name: str) -> Any:
    """``agents.providers.OpenAIProvider`` and its kin, by the class names factory._CLASSES holds."""
    found = next((key for key in PROVIDER_NAMES if class_name(key) == name), None)
    if found is not None:
        return provider_class(found)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""LLM providers behind one interface: OpenAI (and compatible servers), Anthropic and Gemini."""

from agents.providers.anthropic_provider import AnthropicProvider
from agents.providers.base import (
    Completion,
    Message,
    Provider,
    ProviderConfigError,
    ProviderError,
    ProviderUnavailable,
)
from agents.providers.factory import DEFAULT_MODELS, PROVIDER_NAMES, make_provider
from agents.providers.gemini_provider import GeminiProvider
from agents.providers.openai_provider import OpenAIProvider
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

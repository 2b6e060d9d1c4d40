"""List prices of common models, so every call can report what it cost.

Prices are USD per one million tokens, taken from the vendors' public price
pages (2025-2026). They drift; deployments override or extend them from settings
(a JSON object) rather than by editing this file. A model is matched by the
longest table key it starts with (up to a "-", "@" or ":"), so dated snapshots such as
"gpt-4o-2024-08-06" or "claude-sonnet-4-5-20250929" find their family.
Unknown models (a local vLLM or Ollama model, say) cost 0.0 and `is_priced`
says False, so a budget can tell "free" from "unknown".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.providers.base import ProviderConfigError


@dataclass(frozen=True)
class Price:
    """USD per one million input and output tokens."""

    input_per_mtok: float
    output_per_mtok: float


PriceTable = Mapping[str, Price]

# A key matches a model that equals it or continues with one of these, so
# "gpt-4o" prices "gpt-4o-2024-08-06" but "gpt-5" does not price "gpt-5.5".
_SEPARATORS = ("", "-", "@", ":")

DEFAULT_PRICES: dict[str, Price] = {
    # OpenAI
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-5": Price(1.25, 10.00),
    "gpt-5-mini": Price(0.25, 2.00),
    "gpt-5-nano": Price(0.05, 0.40),
    "gpt-5.1": Price(1.25, 10.00),
    "gpt-5.2": Price(1.75, 14.00),
    "gpt-5.4": Price(2.50, 15.00),
    "gpt-5.4-mini": Price(0.75, 4.50),
    "gpt-5.4-nano": Price(0.20, 1.25),
    "gpt-5.4-pro": Price(30.00, 180.00),
    "gpt-5.5": Price(5.00, 30.00),
    "gpt-5.5-pro": Price(30.00, 180.00),
    "o1": Price(15.00, 60.00),
    "o1-mini": Price(1.10, 4.40),
    "o3": Price(2.00, 8.00),
    "o3-mini": Price(1.10, 4.40),
    "o3-pro": Price(20.00, 80.00),
    "o4-mini": Price(1.10, 4.40),
    # Anthropic. Opus changed price at 4.5, so the older Opus 4 ids are listed one by one.
    "claude-opus-4-0": Price(15.00, 75.00),
    "claude-opus-4-1": Price(15.00, 75.00),
    "claude-opus-4-20250514": Price(15.00, 75.00),
    "claude-opus-4-5": Price(5.00, 25.00),
    "claude-opus-4-6": Price(5.00, 25.00),
    "claude-opus-4-7": Price(5.00, 25.00),
    "claude-sonnet-4": Price(3.00, 15.00),
    "claude-haiku-4-5": Price(1.00, 5.00),
    "claude-3-7-sonnet": Price(3.00, 15.00),
    "claude-3-5-sonnet": Price(3.00, 15.00),
    "claude-3-5-haiku": Price(0.80, 4.00),
    "claude-3-opus": Price(15.00, 75.00),
    "claude-3-haiku": Price(0.25, 1.25),
    # Google (prompts up to 200k tokens; longer ones cost more and are not priced here).
    "gemini-2.5-pro": Price(1.25, 10.00),
    "gemini-2.5-flash": Price(0.30, 2.50),
    "gemini-2.5-flash-lite": Price(0.10, 0.40),
    "gemini-3-pro-preview": Price(2.00, 12.00),
}


def parse_prices(raw: Mapping[str, Any]) -> dict[str, Price]:
    """Read a price table from settings JSON.

    Each value is {"input": usd_per_mtok, "output": usd_per_mtok} or a pair
    [input, output]; a bad entry is a configuration error naming the model.
    """
    table: dict[str, Price] = {}
    for model, value in raw.items():
        try:
            if isinstance(value, Price):
                price = value
            elif isinstance(value, Mapping):
                price = Price(float(value["input"]), float(value["output"]))
            else:
                inp, out = value
                price = Price(float(inp), float(out))
        except (KeyError, TypeError, ValueError) as exc:
            raise ProviderConfigError(
                f"bad price for model {model!r}: expected {{'input': x, 'output': y}} or [x, y], got {value!r}"
            ) from exc
        if price.input_per_mtok < 0 or price.output_per_mtok < 0:
            raise ProviderConfigError(f"bad price for model {model!r}: prices cannot be negative")
        table[model.lower()] = price
    return table


def price_for(model: str, table: Mapping[str, Any] | None = None) -> Price | None:
    """The price of `model`: the longest key it starts with, `table` entries overriding the defaults."""
    merged = {**DEFAULT_PRICES, **parse_prices(table)} if table else DEFAULT_PRICES
    name = model.lower()
    matches = [key for key in merged if name.startswith(key) and name[len(key) : len(key) + 1] in _SEPARATORS]
    return merged[max(matches, key=len)] if matches else None


def is_priced(model: str, table: Mapping[str, Any] | None = None) -> bool:
    """Whether `cost_usd` knows this model; False means its 0.0 is "unknown", not "free"."""
    return price_for(model, table) is not None


def cost_usd(model: str, input_tokens: int, output_tokens: int, table: Mapping[str, Any] | None = None) -> float:
    """Cost of one call in USD; 0.0 for a model nobody priced (see `is_priced`)."""
    price = price_for(model, table)
    if price is None:
        return 0.0
    return (input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok) / 1_000_000

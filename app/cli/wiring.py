"""Composition: the judge, a provider, the offline engine and the strategy
source wired into one search. The service's workers use the same function."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agents.providers import Provider, make_provider
from agents.search import Search, SearchConfig
from sandbox import EvalOptions, Judge

from ..settings import get_settings


def build_provider(name: str, model: str | None, base_url: str | None) -> Provider | None:
    if name == "offline":
        return None
    settings = get_settings()
    key = settings.openai_api_key if name == "openai" else settings.anthropic_api_key
    prices = json.loads(settings.prices_json) if settings.prices_json else None
    return make_provider(name, model=model or settings.model, base_url=base_url or settings.base_url,
                         api_key=key.get_secret_value() if key else None, prices=prices)


def offline_engine() -> Any:
    try:
        from agents.offline import OfflineEngine
    except ImportError:  # the engine is optional for LLM runs
        return None
    return OfflineEngine()


@contextmanager
def build_search(provider: str, model: str | None, base_url: str | None, config: SearchConfig,
                 options: EvalOptions, on_event: Callable[[dict[str, Any]], None] | None = None,
                 trajectory_path: Path | None = None) -> Iterator[Search]:
    from ..kb import knowledge_base

    kb = knowledge_base()
    with Judge(warm=True) as judge:
        yield Search(judge, options, provider=build_provider(provider, model, base_url), config=config,
                     offline=offline_engine(), on_event=on_event, trajectory_path=trajectory_path,
                     strategies=kb, archive=kb)

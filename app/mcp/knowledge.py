"""search_strategies on this machine: the knowledge base of the service
database (the one `kforge kb search` and the workers use), opened on first use."""

from __future__ import annotations

import logging
from typing import Any, Protocol

from ..errors import KForgeError

log = logging.getLogger("kforge.mcp")


class KnowledgeUnavailable(KForgeError):
    status_code = 503


class StrategySearch(Protocol):
    def search(self, query: str, k: int = 5, filters: dict[str, Any] | None = None,
               mode: str = "hybrid") -> list[dict[str, Any]]: ...


def strategy_filters(backend: str | None, op_family: str | None) -> dict[str, Any] | None:
    filters = {"backend": backend, "op_families": [op_family] if op_family else None}
    return {k: v for k, v in filters.items() if v} or None


def local_knowledge(db_url: str) -> StrategySearch:
    try:
        from ..kb import knowledge_base
    except ImportError as exc:
        raise KnowledgeUnavailable(f"the knowledge base is not available ({exc})") from exc
    try:
        return knowledge_base(db_url)
    except Exception as exc:
        log.exception("cannot open the knowledge base")
        raise KnowledgeUnavailable(f"the knowledge base is not available ({type(exc).__name__}: {exc})") from exc

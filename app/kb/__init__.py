"""The knowledge base as the service uses it: strategies and the archive live
in the service's own database (SqlStore), shared by every worker."""

from __future__ import annotations

from functools import lru_cache

from knowledge_base.facade import KnowledgeBase

from ..settings import get_settings
from .sql_store import SqlStore


@lru_cache
def knowledge_base(url: str | None = None) -> KnowledgeBase:
    url = url or get_settings().db_url
    if url.startswith("sqlite"):  # embedded: the file is ours to bring to the current schema
        from ..db.migrate import upgrade_database

        upgrade_database(url)
    return KnowledgeBase(SqlStore(url))

"""knowledge_base's Store protocol over the service database (PostgreSQL or SQLite).

Vectors are stored as float32 blobs and ranked in process (numpy cosine in
knowledge_base.retrieval). pgvector would move that ranking into PostgreSQL;
it is not used because no pgvector package can be installed on our build hosts
(see docs/runbook.md) -- at the sizes a strategy store reaches (hundreds to a
few thousand rows) the in-process ranking costs milliseconds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from knowledge_base.filters import Filters
from knowledge_base.model import ArchiveEntry, Strategy
from knowledge_base.store import Indexed, export_jsonl, import_jsonl

from ..db.models import KbArchive, KbStrategy
from ..db.session import transaction


class SqlStore:
    def __init__(self, url: str) -> None:
        self.url = url

    def put(self, strategy: Strategy, vector: np.ndarray | None = None, embedder: str | None = None) -> None:
        for attempt in range(2):  # two workers inserting the same new id: the loser updates
            try:
                with transaction(self.url) as s:
                    row = s.get(KbStrategy, strategy.id)
                    if row is None:
                        row = KbStrategy(id=strategy.id)
                        s.add(row)
                    row.data, row.updated_at = strategy.to_dict(), strategy.updated_at
                    if vector is not None:
                        row.vector, row.embedder = np.asarray(vector, np.float32).tobytes(), embedder
                return
            except IntegrityError:
                if attempt:
                    raise

    def get(self, strategy_id: str) -> Strategy | None:
        with transaction(self.url) as s:
            row = s.get(KbStrategy, strategy_id)
            return None if row is None else Strategy.from_dict(row.data)

    def all(self) -> list[Strategy]:
        with transaction(self.url) as s:
            return [Strategy.from_dict(r.data) for r in s.scalars(select(KbStrategy))]

    def candidates(self, filters: Filters, query_vector: np.ndarray | None = None,
                   limit: int | None = None) -> list[Indexed]:
        with transaction(self.url) as s:
            rows = list(s.scalars(select(KbStrategy)))
            out = []
            for r in rows:
                strategy = Strategy.from_dict(r.data)
                if filters.matches(strategy):
                    vector = np.frombuffer(r.vector, np.float32).copy() if r.vector else None
                    out.append(Indexed(strategy, vector, r.embedder))
            return out

    def archive_put(self, entry: ArchiveEntry) -> None:
        with transaction(self.url) as s:
            row = s.get(KbArchive, (entry.signature, entry.backend, entry.arch))
            if row is None:
                s.add(KbArchive(signature=entry.signature, backend=entry.backend, arch=entry.arch,
                                data=entry.to_dict()))
            else:
                row.data = entry.to_dict()

    def archive_get(self, signature: str) -> list[ArchiveEntry]:
        with transaction(self.url) as s:
            return [ArchiveEntry.from_dict(r.data) for r in s.scalars(
                select(KbArchive).where(KbArchive.signature == signature))]

    def archive_all(self) -> list[ArchiveEntry]:
        with transaction(self.url) as s:
            return [ArchiveEntry.from_dict(r.data) for r in s.scalars(select(KbArchive).order_by(KbArchive.signature))]

    def export_jsonl(self, path: str | Path) -> int:
        return export_jsonl(self, path)

    def import_jsonl(self, path: str | Path) -> int:
        return import_jsonl(self, path)

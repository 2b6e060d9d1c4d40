"""Where strategies and archived kernels live.

``Store`` is the small protocol the knowledge base needs; the service
implements it over its own database tables (pgvector on PostgreSQL), and
``FileStore`` here is the in-process one: a SQLite file (stdlib ``sqlite3``)
with vectors as float32 blobs and a numpy cosine index in memory, used by the
CLI, tests and benchmarks. Vectors are tagged with the embedder and the text
that made them (``embed.vector_tag``); stale ones are recomputed on use.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from .filters import Filters
from .model import ArchiveEntry, Evidence, Strategy


@dataclass
class Indexed:
    strategy: Strategy
    vector: np.ndarray | None   # unit length; None when not embedded yet
    embedder: str | None        # embed.vector_tag of ``vector``: which embedder, which text


class Store(Protocol):
    def put(self, strategy: Strategy, vector: np.ndarray | None = None, embedder: str | None = None) -> None:
        """Add or replace a strategy (by id). A None vector keeps the stored one."""
        ...

    def get(self, strategy_id: str) -> Strategy | None: ...

    def all(self) -> list[Strategy]: ...

    def candidates(self, filters: Filters, query_vector: np.ndarray | None = None,
                   limit: int | None = None) -> list[Indexed]:
        """Strategies passing ``filters``. With ``query_vector`` and ``limit`` a store may return
        only the ``limit`` nearest (pgvector does this with its index); FileStore returns all."""
        ...

    def archive_put(self, entry: ArchiveEntry) -> None:
        """Add or replace the entry for (signature, backend, arch)."""
        ...

    def archive_get(self, signature: str) -> list[ArchiveEntry]: ...

    def archive_all(self) -> list[ArchiveEntry]: ...

    def export_jsonl(self, path: str | Path) -> int: ...

    def import_jsonl(self, path: str | Path) -> int: ...


_SCHEMA = """
CREATE TABLE IF NOT EXISTS strategies (
    id TEXT PRIMARY KEY, data TEXT NOT NULL, vector BLOB, embedder TEXT, updated_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS archive (
    signature TEXT NOT NULL, backend TEXT NOT NULL, arch TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (signature, backend, arch));
"""


class FileStore:
    """A SQLite file (or ":memory:"). Safe to share between threads; other processes'
    writes to the same file are noticed (``PRAGMA data_version``) and reloaded."""

    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA busy_timeout = 5000")
        if self.path != ":memory:":
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL: durable on crash, not on power loss
        self._db.executescript(_SCHEMA)
        self._lock = threading.RLock()
        self._cache: dict[str, Indexed] | None = None
        self._version = -1

    def close(self) -> None:
        self._db.close()

    # -- strategies ---------------------------------------------------------------------------------------
    def _rows(self) -> dict[str, Indexed]:
        version = self._db.execute("PRAGMA data_version").fetchone()[0]
        if self._cache is None or version != self._version:
            cache = {}
            for sid, data, blob, embedder in self._db.execute("SELECT id, data, vector, embedder FROM strategies"):
                vector = np.frombuffer(blob, np.float32).copy() if blob else None
                cache[sid] = Indexed(Strategy.from_dict(json.loads(data)), vector, embedder)
            self._cache, self._version = cache, version
        return self._cache

    def put(self, strategy: Strategy, vector: np.ndarray | None = None, embedder: str | None = None) -> None:
        data = json.dumps(strategy.to_dict())
        blob = None if vector is None else np.asarray(vector, np.float32).tobytes()
        with self._lock:
            self._db.execute(
                "INSERT INTO strategies (id, data, vector, embedder, updated_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at, "
                "vector = COALESCE(excluded.vector, strategies.vector), "
                "embedder = COALESCE(excluded.embedder, strategies.embedder)",
                (strategy.id, data, blob, embedder if blob is not None else None, strategy.updated_at))
            self._cache = None

    def get(self, strategy_id: str) -> Strategy | None:
        with self._lock:
            row = self._rows().get(strategy_id)
        return None if row is None else Strategy.from_dict(row.strategy.to_dict())

    def all(self) -> list[Strategy]:
        with self._lock:
            return [Strategy.from_dict(r.strategy.to_dict()) for r in self._rows().values()]

    def candidates(self, filters: Filters, query_vector: np.ndarray | None = None,
                   limit: int | None = None) -> list[Indexed]:
        with self._lock:
            rows = list(self._rows().values())
        return [Indexed(Strategy.from_dict(r.strategy.to_dict()), r.vector, r.embedder)
                for r in rows if filters.matches(r.strategy)]

    # -- archive ------------------------------------------------------------------------------------------
    def archive_put(self, entry: ArchiveEntry) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO archive (signature, backend, arch, data) VALUES (?, ?, ?, ?)",
                             (entry.signature, entry.backend, entry.arch, json.dumps(entry.to_dict())))

    def archive_get(self, signature: str) -> list[ArchiveEntry]:
        with self._lock:
            rows = self._db.execute("SELECT data FROM archive WHERE signature = ?", (signature,)).fetchall()
        return [ArchiveEntry.from_dict(json.loads(r[0])) for r in rows]

    def archive_all(self) -> list[ArchiveEntry]:
        with self._lock:
            rows = self._db.execute("SELECT data FROM archive ORDER BY signature").fetchall()
        return [ArchiveEntry.from_dict(json.loads(r[0])) for r in rows]

    # -- JSONL --------------------------------------------------------------------------------------------
    def export_jsonl(self, path: str | Path) -> int:
        return export_jsonl(self, path)

    def import_jsonl(self, path: str | Path) -> int:
        return import_jsonl(self, path)


def export_jsonl(store: Store, path: str | Path) -> int:
    """One JSON object a line: {"kind": "strategy", "strategy": ...} or {"kind": "archive", "entry": ...}.
    Vectors are left out (they belong to an embedder); returns the number of lines."""
    lines = [json.dumps({"kind": "strategy", "strategy": s.to_dict()}, sort_keys=True)
             for s in sorted(store.all(), key=lambda s: s.id)]
    lines += [json.dumps({"kind": "archive", "entry": e.to_dict()}, sort_keys=True) for e in store.archive_all()]
    Path(path).write_text("".join(line + "\n" for line in lines))
    return len(lines)


def import_jsonl(store: Store, path: str | Path) -> int:
    """Merge an export into ``store``: a known strategy gains the evidence it lacks and takes the
    newer text; an archive entry replaces the stored one only if it is better. Returns lines read."""
    count = 0
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        count += 1
        if record.get("kind") == "archive":
            entry = ArchiveEntry.from_dict(record["entry"])
            current = next((e for e in store.archive_get(entry.signature)
                            if (e.backend, e.arch) == (entry.backend, entry.arch)), None)
            if entry.better_than(current):
                store.archive_put(entry)
        elif record.get("kind") == "strategy":
            store.put(_union(store.get(record["strategy"]["id"]), Strategy.from_dict(record["strategy"])))
        else:
            raise ValueError(f"{path}: line {count}: unknown record kind {record.get('kind')!r}")
    return count


def _union(current: Strategy | None, incoming: Strategy) -> Strategy:
    if current is None:
        return incoming
    newer = incoming if incoming.updated_at > current.updated_at else current
    seen = {e.key for e in current.evidence}
    evidence: list[Evidence] = current.evidence + [e for e in incoming.evidence if e.key not in seen]
    return Strategy(id=current.id, title=newer.title, summary=newer.summary, rationale=newer.rationale,
                    applies_to=newer.applies_to, source=current.source, evidence=evidence,
                    created_at=min(current.created_at, incoming.created_at),
                    updated_at=max(current.updated_at, incoming.updated_at), confidence=newer.confidence)

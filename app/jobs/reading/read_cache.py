"""The answer to `GET /v1/jobs/{id}`, kept per API process while PostgreSQL says what
changed. Why: clients poll a job many times between its changes, and the two selects
behind a read cost most of it (docs/benchmarks/history/2026-12-03.md, issue 31).

Triggers (migration 0005) NOTIFY `kforge_job_changed` with a job's id whenever the job or
one of its candidates is written, and `*` when a user row changes (an answer carries its
owner's name). Each API process LISTENs on one connection of its own. The cache holds
answers only while that connection is up: it empties when the connection comes up and when
it is lost, so a change made while nobody listened is never served. A reading begun before
a change that is announced while the reading is in flight is not kept (`begin` / `put`).
This process's own commits of a job or candidate invalidate it at once (a session event),
before their NOTIFY comes back. Answers are bounded in bytes, least recently used first.

An answer is therefore at most one notification's delivery behind the database for
changes made by other processes (workers) -- milliseconds on one host -- and never behind
for this process's own writes. With SQLite, or without the triggers, there is no cache.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session

from ...db.loop_reads import conninfo
from ...db.models import Candidate, Job
from ...settings import Settings

log = logging.getLogger("kforge.jobs")
CHANNEL = "kforge_job_changed"
EVERYTHING = "*"
MAX_BYTES = 64 << 20
MAX_CHANGED = 100_000  # ids whose last change is remembered; older ones count as changed just now
RECONNECT_S = 1.0


class ReadCache:
    """Job id -> (owner id, the answer's JSON). Thread-safe: the session event runs in pool threads."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.up = False
        self.entries: OrderedDict[str, tuple[int, bytes]] = OrderedDict()
        self.bytes = 0
        self.tick = 0                        # one per change seen
        self.floor = 0                       # a reading begun before this tick is never kept
        self.changed_at: OrderedDict[str, int] = OrderedDict()
        self.lock = threading.Lock()
        self.task: asyncio.Task[None] | None = None

    def get(self, job_id: str) -> tuple[int, bytes] | None:
        with self.lock:
            found = self.entries.get(job_id) if self.up else None
            if found is not None:
                self.entries.move_to_end(job_id)
            return found

    def begin(self) -> int:
        """The tick a reading of the database starts at (pass it to `put`)."""
        return self.tick

    def put(self, job_id: str, started: int, owner_id: int, body: bytes) -> None:
        """Keep a reading unless the job changed since it began (or the listener is down)."""
        with self.lock:
            if not self.up or started < self.floor or self.changed_at.get(job_id, 0) > started:
                return
            old = self.entries.pop(job_id, None)
            self.bytes += len(body) - (len(old[1]) if old else 0)
            self.entries[job_id] = (owner_id, body)
            while self.bytes > self.max_bytes and self.entries:
                _, (_, dropped) = self.entries.popitem(last=False)
                self.bytes -= len(dropped)

    def changed(self, job_id: str) -> None:
        if job_id == EVERYTHING:
            self.clear()
            return
        with self.lock:
            self.tick += 1
            self.changed_at[job_id] = self.tick
            self.changed_at.move_to_end(job_id)
            if len(self.changed_at) > MAX_CHANGED:
                _, oldest = self.changed_at.popitem(last=False)
                self.floor = max(self.floor, oldest)
            old = self.entries.pop(job_id, None)
            if old:
                self.bytes -= len(old[1])

    def clear(self) -> None:
        with self.lock:
            self.tick += 1
            self.floor = self.tick
            self.entries.clear()
            self.changed_at.clear()
            self.bytes = 0

    def set_up(self, up: bool) -> None:
        self.clear()
        self.up = up


_CACHES: dict[tuple[asyncio.AbstractEventLoop, str], ReadCache] = {}  # this process's, one per loop and database
TRIGGERS = ("kforge_jobs_changed", "kforge_candidates_changed", "kforge_users_changed")  # migration 0005
_TRIGGERS = f"SELECT count(*) FROM pg_trigger WHERE tgname IN ({', '.join(repr(t) for t in TRIGGERS)})"


def cache_for(settings: Settings) -> ReadCache | None:
    """This event loop's cache for the settings' database (its listener started on first use);
    None on SQLite, or when the cache is turned off."""
    if not settings.db_url.startswith("postgresql") or not settings.api_read_cache:
        return None
    loop = asyncio.get_running_loop()
    cache = _CACHES.get((loop, settings.db_url))
    if cache is None:
        for key in [k for k in _CACHES if k[0].is_closed()]:
            del _CACHES[key]
        cache = _CACHES[(loop, settings.db_url)] = ReadCache()
        cache.task = loop.create_task(_keep_listening(settings.db_url, cache), name="kforge-read-cache")
    return cache


async def _keep_listening(url: str, cache: ReadCache) -> None:
    while True:
        try:
            await _listen(url, cache)
        except asyncio.CancelledError:
            cache.set_up(False)
            raise
        except Exception as exc:
            log.warning("read cache listener lost (%s: %s); reads go to the database", type(exc).__name__, exc)
        cache.set_up(False)
        await asyncio.sleep(RECONNECT_S)


async def _listen(url: str, cache: ReadCache) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(conninfo(url), autocommit=True, connect_timeout=5) as conn:
        found = await (await conn.execute(_TRIGGERS)).fetchone()
        if not found or found[0] < len(TRIGGERS):
            log.warning("read cache off: the change triggers are missing (run `kforge db upgrade`)")
            await asyncio.Event().wait()  # stays off for this process's life
        await conn.execute(f"LISTEN {CHANNEL}")
        cache.set_up(True)  # from here on every change is heard
        async for note in conn.notifies():
            cache.changed(note.payload)


@event.listens_for(Session, "after_flush")
def _note_writes(session: Session, _: Any) -> None:
    ids = session.info.setdefault("kforge_jobs_written", set())
    for obj in (*session.new, *session.dirty, *session.deleted):
        if isinstance(obj, Job):
            ids.add(obj.id)
        elif isinstance(obj, Candidate):
            ids.add(obj.job_id)


@event.listens_for(Session, "after_commit")
def _invalidate_written(session: Session) -> None:
    for job_id in session.info.pop("kforge_jobs_written", ()):
        for cache in list(_CACHES.values()):
            cache.changed(job_id)


@event.listens_for(Session, "after_rollback")
def _forget_writes(session: Session) -> None:
    session.info.pop("kforge_jobs_written", None)

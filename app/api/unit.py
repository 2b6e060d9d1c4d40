"""The API's unit of work. Why not a session dependency: FastAPI runs every
sync dependency and handler in its own trip through the thread pool, and under
load those hand-offs cost more than the queries (docs/benchmarks/history/2026-11-24.md). A
request makes one trip: `await db.run(fn)` opens a session, calls
`fn(session)`, commits, sends the jobs it queued to the broker (after the
commit: a worker must find the row; app/jobs/sending/broker.py), announces the jobs
it finished, and closes. On PostgreSQL a prebuilt read (`await db.rows(stmt,
params)`, several at once with `db.rows_many`) and a one-statement write (`await
db.write(...)`) skip the thread and the session: they run on the event loop
(app/db/loop_reads.py)."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, TypeVar

from sqlalchemy import Executable
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from ..db.loop_reads import loop_pool
from ..db.session import engine_for, transaction
from ..jobs.sending.broker import after_commit, inspectable, send
from ..jobs.sending.loop_send import send_on_loop
from ..settings import get_settings

T = TypeVar("T")


class StaleConnection(Exception):
    """The unit of work met a connection the database had closed (a restart, a
    fail-over) before committing anything: it may run again on a fresh one."""


@lru_cache
def sessions(url: str) -> tuple[sessionmaker[Session], sessionmaker[Session]]:
    """(writes, reads) on one pool without pre-ping. Reads run in autocommit:
    no BEGIN and COMMIT round trips around one or two SELECTs."""
    engine = engine_for(url, pre_ping=False)
    return (sessionmaker(engine, expire_on_commit=False),
            sessionmaker(engine.execution_options(isolation_level="AUTOCOMMIT"), expire_on_commit=False))


class Db:
    def __init__(self, url: str) -> None:
        self.url = url
        self.on_loop = url.startswith("postgresql")  # rows() and write() run on the event loop

    async def run(self, fn: Callable[[Session], T]) -> T:
        """`fn` in a transaction: committed, then the jobs it queued are sent."""
        return await run_in_threadpool(self.run_sync, fn)

    async def read(self, fn: Callable[[Session], T]) -> T:
        """`fn` reads only: no transaction around it."""
        return await run_in_threadpool(self.run_sync, fn, True)

    async def rows(self, statement: Executable, params: dict[str, Any]) -> list[dict[str, Any]]:
        """The rows of a prebuilt Core select, as dicts: on the event loop on
        PostgreSQL, through `read` elsewhere (SQLite)."""
        if self.on_loop:
            return await loop_pool(self.url).fetch(statement, params)
        return await self.read(lambda s: [dict(r) for r in s.connection().execute(statement, params).mappings()])

    async def rows_many(self, queries: list[tuple[Executable, dict[str, Any]]]) -> list[list[dict[str, Any]]]:
        """The rows of each prebuilt select: on the event loop on one pooled connection on
        PostgreSQL, in one `read` elsewhere."""
        if self.on_loop:
            return await loop_pool(self.url).fetch_many(queries)
        return await self.read(lambda s: [[dict(r) for r in s.connection().execute(q, p).mappings()] for q, p in queries])

    async def write(self, statement: Executable, params: dict[str, Any], queued: list[tuple[str, str]]) -> None:
        """PostgreSQL only: one idempotent statement (LoopPool.execute), its own
        transaction, on the event loop; then the jobs `queued` ((id, queue)) are
        sent: from the event loop to a Redis broker (app/jobs/sending/loop_send.py), in
        the thread pool to another (Celery's client blocks). A broker outage
        leaves them for the reaper, as after `run`."""
        await loop_pool(self.url).execute(statement, params)
        if queued and inspectable():
            await send_on_loop(get_settings().queue_url, queued)
        elif queued:
            await run_in_threadpool(send, queued)

    def run_sync(self, fn: Callable[[Session], T], read: bool = False) -> T:
        try:
            return self._once(fn, read)
        except StaleConnection:  # the pool has dropped its dead connections by now
            try:
                return self._once(fn, read)
            except StaleConnection as again:  # the database itself is down: a 503 (app/api/errors.py)
                raise again.__cause__ from None

    def _once(self, fn: Callable[[Session], T], read: bool) -> T:
        with transaction(self.url, factory=sessions(self.url)[read]) as session:
            try:
                result = fn(session)
            except DBAPIError as exc:
                if exc.connection_invalidated:
                    raise StaleConnection() from exc
                raise
        after_commit(session)
        return result

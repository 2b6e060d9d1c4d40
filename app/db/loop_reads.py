"""Statements on PostgreSQL from the event loop itself. Why: the API's hot
paths (a job by id, a submission) spent more CPU handing the query to a pool
thread and through SQLAlchemy's session and execution machinery than
PostgreSQL spent answering it (docs/benchmarks/history/2026-11-27.md, issue 31). Here a prebuilt
Core statement is compiled once to SQL and run on a psycopg async connection
in autocommit (no BEGIN or COMMIT round trips; psycopg prepares a statement it
has seen a few times), one small pool per event loop. Rows come back as dicts
with timestamps in UTC, the values SQLAlchemy would give (UTCDateTime, JSON);
dict and list parameters go out as JSON."""

from __future__ import annotations

import asyncio
import weakref
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Json
from sqlalchemy import Executable
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import make_url

DIALECT = postgresql.dialect(paramstyle="pyformat")


@lru_cache(maxsize=64)
def compiled(statement: Executable) -> str:
    """The statement's SQL with `%(name)s` placeholders (prebuilt statements only: the cache holds them)."""
    return str(statement.compile(dialect=DIALECT))


def conninfo(url: str) -> str:
    """libpq's URI for a SQLAlchemy PostgreSQL URL (any driver suffix dropped)."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _utc(row: dict[str, Any]) -> dict[str, Any]:
    for key, value in row.items():
        if isinstance(value, datetime):
            row[key] = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return row


def _adapted(params: dict[str, Any]) -> dict[str, Any]:
    return {k: Json(v) if isinstance(v, (dict, list)) else v for k, v in params.items()}


class LoopPool:
    """Up to `size` connections, used by one event loop only (no locks: the loop is single-threaded)."""

    def __init__(self, url: str, size: int) -> None:
        self.conninfo = conninfo(url)
        self.idle: list[psycopg.AsyncConnection[dict[str, Any]]] = []
        self.slots = asyncio.Semaphore(size)

    async def _connect(self) -> psycopg.AsyncConnection[dict[str, Any]]:
        return await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True, row_factory=dict_row,
                                                     connect_timeout=5)

    async def fetch(self, statement: Executable, params: dict[str, Any]) -> list[dict[str, Any]]:
        """All rows of `statement`."""
        return (await self._run([(statement, params)], True))[0]

    async def fetch_many(self, queries: list[tuple[Executable, dict[str, Any]]]) -> list[list[dict[str, Any]]]:
        """All rows of each select, one after another on one pooled connection. (psycopg's pipeline mode,
        one round trip for all, cost more CPU per read than the round trip it saved: docs/benchmarks/history/2026-12-01.md.)"""
        return await self._run(queries, True)

    async def execute(self, statement: Executable, params: dict[str, Any]) -> int:
        """A write, its own transaction (autocommit); the rows it touched. It
        may run twice (see `_run`): give it a key chosen by the caller and ON
        CONFLICT DO NOTHING, so the second run changes nothing."""
        return (await self._run([(statement, params)], False))[0]

    async def _run(self, queries: list[tuple[Executable, dict[str, Any]]], rows: bool) -> list[Any]:
        """A pooled connection the server closed (a restart) is dropped and the
        statements run once more on a new one; when that fails too, psycopg's
        OperationalError says the database is down (503)."""
        sent = [(compiled(statement), _adapted(params)) for statement, params in queries]
        async with self.slots:
            for attempt in (0, 1):
                pooled = attempt == 0 and bool(self.idle)
                conn = self.idle.pop() if pooled else await self._connect()
                try:
                    result = [await _one(conn, sql, params, rows) for sql, params in sent]
                except psycopg.OperationalError:
                    await conn.close()
                    if pooled:
                        continue
                    raise
                except BaseException:
                    await conn.close()
                    raise
                self.idle.append(conn)
                return result
        raise AssertionError("unreachable")


async def _one(conn: psycopg.AsyncConnection[dict[str, Any]], sql: str, params: dict[str, Any], rows: bool) -> Any:
    cur = await conn.execute(sql, params)
    return [_utc(r) for r in await cur.fetchall()] if rows else cur.rowcount


_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, LoopPool]] = weakref.WeakKeyDictionary()


def loop_pool(url: str, size: int = 10) -> LoopPool:
    """This event loop's pool for `url` (uvicorn runs one loop per process; tests make a loop per client)."""
    pools = _pools.setdefault(asyncio.get_running_loop(), {})
    if url not in pools:
        pools[url] = LoopPool(url, size)
    return pools[url]

"""Engines and sessions. One engine per database URL per process."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker


@lru_cache
def engine_for(url: str, pre_ping: bool = True) -> Engine:
    """`pre_ping=False`: no `SELECT 1` round trip per checkout; the caller then
    retries a unit of work that met a connection the server had closed
    (app/api/deps.py)."""
    if url.startswith("sqlite"):
        eng = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(eng, "connect")
        def _sqlite_pragmas(conn, _record):  # several processes share the file
            cur = conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        return eng
    return create_engine(url, pool_pre_ping=pre_ping, pool_size=10, max_overflow=20)


@lru_cache
def session_factory(url: str) -> sessionmaker[Session]:
    return sessionmaker(engine_for(url), expire_on_commit=False)


@contextmanager
def transaction(url: str, opened: Callable[[Session], None] | None = None,
                factory: sessionmaker[Session] | None = None) -> Iterator[Session]:
    """One owner per transaction: commit on success, roll back on error. ``opened`` sees
    the session first (app.jobs.sending.broker.job_session hooks its commit there); ``factory``:
    sessions of another pool than ``url``'s default (the API's, app/api/unit.py)."""
    session = (factory or session_factory(url))()
    if opened is not None:
        opened(session)
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()

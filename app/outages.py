"""Telling a dependency outage from a bug, and waiting one out. An exception
that says the database or the broker could not be reached (refused, dropped,
timed out, shutting down) names that dependency; the API answers it with 503
and Retry-After (app/api/errors.py), and a job waits it out and resumes
instead of failing (``outlast``, app/jobs/execute.py). Anything else is the
code's or the job's own failure."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Literal, TypeVar

import psycopg
from kombu.exceptions import OperationalError as KombuOperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

Dependency = Literal["database", "broker"]
# Seconds a client is told to wait: a restart or a fail-over takes a few.
RETRY_AFTER_S = 5
# psycopg's own: the API's reads on the event loop use psycopg without SQLAlchemy (app/db/loop_reads.py).
DATABASE_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError, PoolTimeout,
                                                     psycopg.OperationalError, psycopg.InterfaceError)
BROKER_ERRORS: tuple[type[BaseException], ...] = (KombuOperationalError, RedisConnectionError, RedisTimeoutError)
# SQLite raises OperationalError for its generic error too: no such table or column (a database never
# migrated), a syntax error. That is a mistake waiting does not cure: a 500, not "unreachable".
NOT_AN_OUTAGE = frozenset({"SQLITE_ERROR"})


def _database_down(exc: BaseException) -> bool:
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    return isinstance(exc, DATABASE_ERRORS) and getattr(getattr(exc, "orig", None), "sqlite_errorname", None) \
        not in NOT_AN_OUTAGE


def dependency_down(exc: BaseException | None) -> Dependency | None:
    """"database" or "broker" when `exc` (or what it was raised from) is that
    dependency being unreachable; None otherwise."""
    seen = 0
    while exc is not None and seen < 5:
        if _database_down(exc):
            return "database"
        if isinstance(exc, BROKER_ERRORS):
            return "broker"
        exc, seen = exc.__cause__, seen + 1
    return None


# Waiting out an outage inside a job: a step that fails because the database or the
# broker is unreachable is tried again, every 0.25 s at first and then every 2 s at
# most, so the job goes on within about two seconds of the dependency's return. After
# `wait_s` the error is raised: the job is then left to be resumed later (the task's
# retry, or another worker's reaper once its heartbeat is stale), never marked failed.
log = logging.getLogger("kforge.worker")
T = TypeVar("T")
FIRST_S, MAX_S = 0.25, 2.0


def pause(failures: int) -> float:
    return min(MAX_S, FIRST_S * 2 ** failures)


def outlast(step: Callable[[], T], wait_s: float, what: str) -> T:
    """`step()`, tried again while it meets an outage, for up to `wait_s` seconds."""
    started, failures = time.monotonic(), 0
    while True:
        try:
            return step()
        except Exception as exc:
            down = dependency_down(exc)
            if down is None or time.monotonic() - started >= wait_s:
                raise
            if failures == 0:
                log.warning("%s: the %s is unreachable (%s); waiting for it", what, down, type(exc).__name__)
            time.sleep(pause(failures))
            failures += 1

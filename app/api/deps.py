"""Dependencies, declared once as Annotated aliases: the settings, the unit of
work (`Db`: a session that commits or rolls back, in one worker thread) and
the current user.

Why `Db.run` and not a session dependency: FastAPI runs every sync dependency
and handler in its own trip through the thread pool, and under load those
hand-offs cost more than the queries (see docs/benchmarks.md). A request
now makes one trip: `await db.run(fn)` opens a session, calls `fn(session)`,
commits, sends the jobs it queued to the broker (after the commit: a worker
must find the row), and closes."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Annotated, TypeVar

from fastapi import Depends, Request
from sqlalchemy import event
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from ..db.models import Job, User
from ..db.session import engine_for, session_factory
from ..errors import NotAuthenticated, RateLimited
from ..services.tokens import TokenCache
from ..settings import Settings, get_settings
from ..worker.celery_app import enqueue
from .ratelimit import Limiter, key_for, make_limiter, retry_after

log = logging.getLogger("kforge.api")
T = TypeVar("T")


async def settings() -> Settings:  # async: a sync dependency would cost a thread-pool trip
    return get_settings()


SettingsDep = Annotated[Settings, Depends(settings)]


def send(queued: list[tuple[str, str]]) -> None:
    for job_id, queue in queued:
        try:
            enqueue(job_id, queue)
        except Exception:  # broker down: the job is stored; the workers' reaper sends it later
            log.warning("could not enqueue job %s now; it stays queued for the reaper", job_id, exc_info=True)


def enqueue_after_commit(session: Session, job: Job) -> None:
    session.info.setdefault("enqueue", []).append((job.id, job.queue))


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

    async def run(self, fn: Callable[[Session], T]) -> T:
        """`fn` in a transaction: committed, then the jobs it queued are sent."""
        return await run_in_threadpool(self.run_sync, fn)

    async def read(self, fn: Callable[[Session], T]) -> T:
        """`fn` reads only: no transaction around it."""
        return await run_in_threadpool(self.run_sync, fn, True)

    def run_sync(self, fn: Callable[[Session], T], read: bool = False) -> T:
        try:
            return self._once(fn, read)
        except StaleConnection:  # the pool has dropped its dead connections by now
            return self._once(fn, read)

    def _once(self, fn: Callable[[Session], T], read: bool) -> T:
        with sessions(self.url)[read]() as session:
            try:
                try:
                    result = fn(session)
                except DBAPIError as exc:
                    if exc.connection_invalidated:
                        raise StaleConnection() from exc
                    raise
                if not read:
                    session.commit()
            except BaseException:
                session.rollback()
                raise
            send(session.info.pop("enqueue", []))
        return result


async def db(settings: SettingsDep) -> Db:
    return Db(settings.db_url)


DbDep = Annotated[Db, Depends(db)]


def get_session(settings: Settings = Depends(get_settings)) -> Iterator[Session]:
    """The dashboard's session (its pages are sync handlers): commits when the
    handler returns, rolls back on error; queued jobs are sent after the commit."""
    session = session_factory(settings.db_url)()
    session.info["enqueue"] = []

    @event.listens_for(session, "after_commit")
    def _send(sess: Session) -> None:
        send(sess.info.pop("enqueue", []))
        sess.info["enqueue"] = []

    @event.listens_for(session, "after_rollback")
    def _drop(sess: Session) -> None:
        sess.info["enqueue"] = []

    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def bearer_token(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    cookie = request.cookies.get("kforge_token")
    if cookie:
        return cookie
    raise NotAuthenticated("missing API token: send `Authorization: Bearer <token>` (create one with "
                           "`kforge token create NAME`)")


@lru_cache
def token_cache(ttl_s: float) -> TokenCache:
    return TokenCache(ttl_s)


async def current_user(request: Request, settings: SettingsDep, db: DbDep) -> User:
    token = bearer_token(request)
    cache = token_cache(settings.auth_cache_s)
    return cache.lookup(token) or await db.run(lambda s: cache.authenticate(s, token))


CurrentUser = Annotated[User, Depends(current_user)]


@lru_cache
def limiter(rate: float, burst: int, broker_url: str) -> Limiter | None:
    return make_limiter(rate, burst, broker_url)


async def rate_limit(request: Request, settings: SettingsDep) -> None:
    """Per token (per client address without one); runs before the token is verified."""
    check = limiter(settings.rate_limit_per_s, settings.rate_limit_burst, settings.queue_url)
    if check is None:
        return
    credential = request.headers.get("authorization") or request.cookies.get("kforge_token") \
        or (request.client.host if request.client else "-")
    wait = await check.check(key_for(credential))
    if wait > 0:
        raise RateLimited(f"rate limit of {settings.rate_limit_per_s:g} requests/s per token "
                          f"(burst {settings.rate_limit_burst}) reached; retry in {retry_after(wait)} s",
                          retry_after(wait))


RateLimit = Depends(rate_limit)

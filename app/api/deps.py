"""Dependencies, declared once as Annotated aliases: the settings, the unit of
work (`Db`, app/api/unit.py), the current user and the rate limit. The cheap
ones are `async`: FastAPI runs a sync dependency in a thread-pool trip of its
own, which under load costs more than the work (docs/benchmarks.md)."""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy import event
from sqlalchemy.orm import Session

from ..db.models import User
from ..db.session import session_factory
from ..errors import NotAuthenticated, RateLimited
from ..services.tokens import TokenCache
from ..settings import Settings, get_settings
from .ratelimit import Limiter, key_for, make_limiter, retry_after
from .unit import Db, enqueue_after_commit, send

__all__ = ["CurrentUser", "Db", "DbDep", "RateLimit", "SettingsDep", "bearer_token", "enqueue_after_commit",
           "get_session"]


async def settings() -> Settings:  # async: a sync dependency would cost a thread-pool trip
    return get_settings()


SettingsDep = Annotated[Settings, Depends(settings)]


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

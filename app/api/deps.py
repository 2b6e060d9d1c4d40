"""Dependencies, declared once as Annotated aliases: the session (which owns
the transaction), the settings and the current user."""

from __future__ import annotations

import logging
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
from ..worker.celery_app import enqueue
from .ratelimit import Limiter, key_for, make_limiter, retry_after

log = logging.getLogger("kforge.api")

SettingsDep = Annotated[Settings, Depends(get_settings)]


def get_session(settings: SettingsDep) -> Iterator[Session]:
    """Commits when the handler returns, rolls back on error; jobs queued
    during the request are sent to the broker only after the commit."""
    session = session_factory(settings.db_url)()
    session.info["enqueue"] = []

    @event.listens_for(session, "after_commit")
    def _send(sess: Session) -> None:
        for job_id, queue in sess.info.pop("enqueue", []):
            try:
                enqueue(job_id, queue)
            except Exception:  # broker down: the job is stored; the workers' reaper sends it later
                log.warning("could not enqueue job %s now; it stays queued for the reaper", job_id, exc_info=True)
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


SessionDep = Annotated[Session, Depends(get_session)]


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


def current_user(session: SessionDep, settings: SettingsDep, token: Annotated[str, Depends(bearer_token)]) -> User:
    return token_cache(settings.auth_cache_s).authenticate(session, token)


CurrentUser = Annotated[User, Depends(current_user)]


@lru_cache
def limiter(rate: float, burst: int, broker_url: str) -> Limiter | None:
    return make_limiter(rate, burst, broker_url)


async def rate_limit(request: Request, settings: SettingsDep) -> None:
    """Per token (per client address without one); runs before the token is verified."""
    check = limiter(settings.rate_limit_per_s, settings.rate_limit_burst, settings.queue_url)
    if check is None:
        return
    header = request.headers.get("authorization") or request.cookies.get("kforge_token") \
        or (request.client.host if request.client else "-")
    wait = await check.check(key_for(header))
    if wait > 0:
        raise RateLimited(f"rate limit of {settings.rate_limit_per_s:g} requests/s per token "
                          f"(burst {settings.rate_limit_burst}) reached; retry in {retry_after(wait)} s",
                          retry_after(wait))


RateLimit = Depends(rate_limit)

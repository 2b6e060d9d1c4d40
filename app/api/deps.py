"""Dependencies of the API, declared once as Annotated aliases: the unit of
work (`Db`, app/api/unit.py), the current user and the rate limit (the settings
and the bearer token are shared with the dashboard: app/deps.py), and `Caller`,
the three in one for the hot /v1/jobs routes: FastAPI's solving costs about
40 us of CPU per dependency per request, a tenth of a job read's
(docs/benchmarks/history/2026-11-27.md, issue 31). The cheap ones are `async`: FastAPI runs a
sync dependency in a thread-pool trip of its own, which under load costs more
than the work."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated

from fastapi import Depends, Request

from ..auth.tokens import TokenCache
from ..db.models import User
from ..deps import SettingsDep, bearer_token
from ..errors import RateLimited
from .ratelimit import Limiter, key_for, make_limiter, retry_after
from .unit import Db

__all__ = ["Caller", "CallerDep", "CurrentUser", "Db", "DbDep", "RateLimit", "SettingsDep"]


async def db(settings: SettingsDep) -> Db:
    return Db(settings.db_url)


DbDep = Annotated[Db, Depends(db)]


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


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asks (verified) and the unit of work of their request."""

    user: User
    db: Db


async def caller(request: Request, settings: SettingsDep) -> Caller:
    """The rate limit, then the token: what `RateLimit`, `DbDep` and `CurrentUser` do, as one dependency."""
    await rate_limit(request, settings)
    unit = Db(settings.db_url)
    return Caller(await current_user(request, settings, unit), unit)


CallerDep = Annotated[Caller, Depends(caller)]

"""Dependencies shared by the API and the dashboard, declared once: the
settings (one dependency; tests override it), the bearer token (header or the
dashboard's cookie) and the dashboard's request session. `async` where cheap:
FastAPI runs a sync dependency in a thread-pool trip of its own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from .errors import NotAuthenticated
from .jobs.sending.broker import job_session
from .settings import Settings, get_settings


async def settings() -> Settings:
    return get_settings()


SettingsDep = Annotated[Settings, Depends(settings)]


def get_session(settings: SettingsDep) -> Iterator[Session]:
    """The dashboard's session (its pages are sync handlers): commits when the
    handler returns, rolls back on error; queued jobs are sent after the commit."""
    yield from job_session(settings.db_url)


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

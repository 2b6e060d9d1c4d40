"""Dependencies, declared once as Annotated aliases: the session (which owns
the transaction), the settings and the current user."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy import event
from sqlalchemy.orm import Session

from ..db.models import User
from ..db.session import session_factory
from ..errors import NotAuthenticated
from ..services.tokens import authenticate
from ..settings import Settings, get_settings
from ..worker.celery_app import enqueue

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


def current_user(session: SessionDep, token: Annotated[str, Depends(bearer_token)]) -> User:
    return authenticate(session, token)


CurrentUser = Annotated[User, Depends(current_user)]

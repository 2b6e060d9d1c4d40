"""Telling waiters that a job reached a final status, without them polling.

The worker (or a cancellation) announces the job's id once its final status
is committed: on Redis pub/sub when the broker is Redis, and with Postgres
NOTIFY (delivered at commit) when the database is PostgreSQL. An API process
listens on one connection for all its waiters (wait.py); with SQLite and the
embedded broker there is nothing to listen to and waiters poll.
"""

from __future__ import annotations

import logging
from functools import lru_cache

from sqlalchemy import text
from sqlalchemy.orm import Session

from ...settings import get_settings

log = logging.getLogger("kforge.jobs")
CHANNEL = "kforge_jobs_finished"


def is_redis(url: str) -> bool:
    return url.startswith(("redis://", "rediss://"))


def notify_finished(session: Session, job_id: str) -> None:
    """Announce `job_id` when `session` commits (the unit of work then calls `publish_pending`)."""
    session.info.setdefault("finished", []).append(job_id)
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_notify(:channel, :job_id)"), {"channel": CHANNEL, "job_id": job_id})


def publish_pending(session: Session) -> None:
    """After a commit: publish what `notify_finished` noted."""
    publish_finished(*session.info.pop("finished", []))


@lru_cache
def _redis(url: str):  # noqa: ANN202  (a redis.Redis: imported lazily)
    import redis

    return redis.Redis.from_url(url, socket_timeout=5)


def publish_finished(*job_ids: str) -> None:
    """On Redis: one message per job. Never fails the caller: waiters re-check now and then anyway."""
    url = get_settings().queue_url
    if not job_ids or not is_redis(url):
        return
    try:
        client = _redis(url)
        for job_id in job_ids:
            client.publish(CHANNEL, job_id)
    except Exception:
        log.warning("could not announce finished job(s) %s", ", ".join(job_ids), exc_info=True)

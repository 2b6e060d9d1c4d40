"""Sending jobs to the workers. The Celery application (named queues, one per
GPU kind plus "cpu"; late acks, redelivery when a worker is lost, one message
in flight per worker; its tasks are in app/worker/tasks.py), and enqueue after
commit: a unit of work notes the jobs it made, and they are sent only once the
commit made their rows visible; a rollback drops them."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from functools import lru_cache

from celery import Celery
from kombu import Exchange, Queue
from sqlalchemy import event
from sqlalchemy.orm import Session

from ...db.models import Job
from ...db.session import transaction
from ...settings import get_settings
from ..reading.notify import publish_pending

log = logging.getLogger("kforge.jobs")


@lru_cache
def celery_app() -> Celery:
    settings = get_settings()
    app = Celery("kforge", broker=settings.queue_url, include=["app.worker.tasks"])
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        task_default_queue="cpu",
        task_serializer="json",
        accept_content=["json"],
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,
        # Kombu's SQLAlchemy transport hands its options to create_engine: Redis only.
        broker_transport_options={"visibility_timeout": settings.visibility_timeout_s}
        if settings.queue_url.startswith(("redis", "rediss")) else {},
        worker_hijack_root_logger=False,
        worker_cancel_long_running_tasks_on_connection_loss=False,
    )
    return app


@lru_cache
def direct(queue: str) -> Queue:
    """`queue` reached through the default exchange: kombu puts the message
    straight on the list named `queue`, without declaring the queue and
    looking up its bindings in Redis on every send (two round trips and 40 %
    of a send's CPU: docs/benchmarks/history/2026-11-27.md, issue 31). The workers declare their
    queues; the message needs no binding, so it is delivered even when Redis
    lost its bindings in a restart."""
    return Queue(queue, Exchange(""), routing_key=queue, no_declare=True)


def enqueue(job_id: str, queue: str) -> None:
    celery_app().send_task("kforge.run_job", args=[job_id], queue=direct(queue), declare=[])


# Kombu's Redis transport keeps one list per priority step next to the queue's own.
_PRIORITY_SUFFIXES = ("", "\x06\x163", "\x06\x166", "\x06\x169")


@lru_cache
def _redis(url: str):  # noqa: ANN202  (a redis.Redis, imported lazily)
    import redis

    return redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)


def inspectable() -> bool:
    """Can the broker be asked what waits in it, and whether it restarted? (Redis can.)"""
    return get_settings().queue_url.startswith(("redis://", "rediss://"))


def broker_epoch() -> str | None:
    """An id that changes whenever the broker restarts (Redis' run_id); None
    when the broker cannot tell. Raises when the broker is unreachable."""
    if not inspectable():
        return None
    return str(_redis(get_settings().queue_url).info("server")["run_id"])


def waiting_in_broker(queue: str, job_ids: list[str]) -> set[str] | None:
    """The ids among ``job_ids`` whose message still waits in ``queue``; None
    when the broker cannot be asked (only the Redis transport can). Raises
    when the broker is unreachable."""
    if not job_ids:
        return set()
    if not inspectable():
        return None
    client = _redis(get_settings().queue_url)
    raw = [m for suffix in _PRIORITY_SUFFIXES for m in client.lrange(queue + suffix, 0, -1)]
    return {j for j in job_ids if any(j.encode() in m for m in raw)}


def send(queued: list[tuple[str, str]]) -> None:
    for job_id, queue in queued:
        try:
            enqueue(job_id, queue)
        except Exception as exc:  # broker down: the job is stored; the workers' reaper sends it once it is back
            log.warning("could not enqueue job %s now (%s: %s); it stays queued for the reaper", job_id,
                        type(exc).__name__, exc)


def enqueue_after_commit(session: Session, job: Job) -> None:
    """Send `job` once `session` commits (the API's `Db` and `job_session` below do the sending)."""
    session.info.setdefault("enqueue", []).append((job.id, job.queue))


def after_commit(session: Session) -> None:
    """After a unit of work commits: send the jobs it queued, announce the jobs it finished."""
    send(session.info.pop("enqueue", []))
    publish_pending(session)


def job_session(url: str) -> Iterator[Session]:
    """A session for one request (the dashboard's pages are sync handlers):
    commits when the handler returns, rolls back on error; the jobs it queued
    are sent after the commit and dropped on rollback."""
    with transaction(url, _sending) as session:
        yield session


def _sending(session: Session) -> None:
    """Hooks a session so that the jobs it queued are sent after its commit and dropped on
    rollback."""
    session.info["enqueue"] = []

    @event.listens_for(session, "after_commit")
    def _send(sess: Session) -> None:
        after_commit(sess)
        sess.info["enqueue"] = []

    @event.listens_for(session, "after_rollback")
    def _drop(sess: Session) -> None:
        sess.info["enqueue"] = []
        sess.info.pop("finished", None)

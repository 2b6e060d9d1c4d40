"""What the workers' reaper sends again, and sending it.

Candidates: running jobs whose heartbeat is stale (their worker died, or lost
the database for longer than the staleness window) and queued jobs last sent
(or created) `requeue_after_s` ago whose message does not wait in the broker
(when the broker can be asked: Redis). One pass is one transaction: the
candidates are taken with row locks (FOR UPDATE SKIP LOCKED on PostgreSQL, so
the reapers of several workers never take the same job; SQLite has a single
writer), each is sent, and only a job whose send succeeded is marked: a queued
job's heartbeat becomes the time it was sent, and a stale running job goes
back to `queued` (lease cleared, heartbeat = sent), so it is sent once per
window rather than on every pass, and the next claim is an ordinary one. A
failed send (the broker is down) ends the pass: what was sent stays marked,
the rest waits for the next pass.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from ...db.base import utcnow
from ...db.models import Job
from ...db.session import transaction
from ..status import JobStatus
from .broker import enqueue, waiting_in_broker

log = logging.getLogger("kforge.jobs")


def candidates(session: Session, now: datetime, stale_s: float, requeue_after_s: float) -> list[tuple[str, str, str]]:
    """(id, queue, status) of the jobs to send again, locked for this transaction, oldest first."""
    stale, long_ago = now - timedelta(seconds=stale_s), now - timedelta(seconds=requeue_after_s)
    query = select(Job.id, Job.queue, Job.status).where(
        ((Job.status == JobStatus.RUNNING) & (Job.heartbeat_at < stale))
        | ((Job.status == JobStatus.QUEUED) & ((Job.heartbeat_at.is_(None) & (Job.created_at < long_ago))
                                             | (Job.heartbeat_at < long_ago))))
    return [tuple(r) for r in session.execute(  # type: ignore[misc]
        query.order_by(Job.created_at).with_for_update(skip_locked=True)).all()]


def mark_sent(session: Session, job_id: str, status: str, now: datetime) -> None:
    """A queued job's heartbeat is when it was last sent; a stale running one is queued again."""
    values = {"heartbeat_at": now} if status == JobStatus.QUEUED else \
        {"status": JobStatus.QUEUED, "lease": None, "heartbeat_at": now}
    session.execute(update(Job).where(Job.id == job_id, Job.status == status).values(**values)
                    .execution_options(synchronize_session=False))


def reap(url: str, stale_s: float, requeue_after_s: float) -> list[str]:
    """One pass; returns the ids sent. Raises the broker's error when a send
    failed (after committing the marks of those sent before it)."""
    now, sent, failure = utcnow(), [], None
    with transaction(url) as s:
        rows = candidates(s, now, stale_s, requeue_after_s)
        queued = {}
        for job_id, queue, status in rows:
            if status == JobStatus.QUEUED:
                queued.setdefault(queue, []).append(job_id)
        waiting = set().union(*((waiting_in_broker(q, ids) or set()) for q, ids in queued.items()))
        for job_id, queue, status in rows:
            if job_id in waiting:
                continue
            try:
                enqueue(job_id, queue)
            except Exception as exc:  # the broker went away: keep what was sent, stop here
                failure = exc
                break
            mark_sent(s, job_id, status, now)
            sent.append(job_id)
    if failure is not None:
        if sent:
            log.info("re-enqueued %d job(s) before the broker failed: %s", len(sent), ", ".join(sent))
        raise failure
    return sent

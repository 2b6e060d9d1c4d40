"""Celery tasks: thin wrappers that take ids and call plain functions.

No retry on programming errors; database and broker hiccups retry with
exponential back-off. A reaper thread in every worker re-enqueues jobs whose
worker died (stale heartbeat) and queued jobs whose message was lost (a
broker restart); on Redis a queued job whose message still waits is left
alone, so an idle queue does not fill with copies. The lease
(``app.jobs.lease.claim``) makes any duplicate harmless.
"""

from __future__ import annotations

import logging
import threading

from celery.signals import worker_ready
from sqlalchemy.exc import OperationalError

from ..db.session import transaction
from ..jobs.broker import celery_app, enqueue, waiting_in_broker
from ..jobs.lease import mark_sent, to_reap
from ..settings import get_settings
from .execute import execute_job

log = logging.getLogger("kforge.worker")
app = celery_app()


@app.task(name="kforge.run_job", bind=True, autoretry_for=(OperationalError,), retry_backoff=2,
          retry_backoff_max=60, max_retries=8, acks_late=True)
def run_job(self, job_id: str) -> str:  # noqa: ANN001  (Celery's bound task)
    return execute_job(job_id)


def reap_once(requeue_after_s: float | None = None) -> list[str]:
    """Re-enqueue stale running jobs and long-queued ones; returns their ids."""
    settings = get_settings()
    with transaction(settings.db_url) as s:
        rows = to_reap(s, settings.stale_after_s, requeue_after_s or max(settings.stale_after_s, 30.0))
        in_broker = set().union(*(_still_waiting(q, [r[0] for r in rows if r[1] == q and r[2] == "queued"])
                                for q in {r[1] for r in rows}))
        rows = [r for r in rows if r[0] not in in_broker]
        for job_id, _, status in rows:
            if status == "queued":
                mark_sent(s, job_id)
    for job_id, queue, _ in rows:
        enqueue(job_id, queue)
    return [r[0] for r in rows]


def _still_waiting(queue: str, queued: list[str]) -> set[str]:
    try:
        return waiting_in_broker(queue, queued) or set()
    except Exception:  # broker unreachable: re-enqueue, the lease keeps it harmless
        log.warning("could not list queue %s", queue, exc_info=True)
        return set()


def _reaper(every_s: float) -> None:
    while True:
        try:
            found = reap_once()
            if found:
                log.info("re-enqueued %d job(s): %s", len(found), ", ".join(found))
        except Exception:
            log.warning("reaper pass failed", exc_info=True)
        threading.Event().wait(every_s)


@worker_ready.connect
def start_reaper(**_: object) -> None:
    every = max(2.0, get_settings().stale_after_s / 3)
    threading.Thread(target=_reaper, args=(every,), daemon=True, name="kforge-reaper").start()

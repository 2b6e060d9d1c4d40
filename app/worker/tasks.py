"""Celery tasks: thin wrappers that take ids and call plain functions.

No retry on programming errors; a database that cannot be reached when the
task claims its job is waited out inside execute_job, and if it stays away
the task retries with exponential back-off. Every worker also runs the
reaper (reaper.py), which sends again the jobs whose worker died or whose
message the broker lost; the lease (``app.jobs.lease.claim``) makes any
duplicate harmless. The consumer reconnects to a returning broker within a
second (consumer.py).
"""

from __future__ import annotations

from celery.signals import worker_ready
from sqlalchemy.exc import OperationalError

from ..jobs.execute import execute_job
from ..jobs.sending.broker import celery_app
from . import reaper

app = celery_app()
app.conf.worker_consumer = "app.worker.consumer:QuickReconnect"


@app.task(name="kforge.run_job", bind=True, autoretry_for=(OperationalError,), retry_backoff=2,
          retry_backoff_max=60, max_retries=8, acks_late=True)
def run_job(self, job_id: str) -> str:  # noqa: ANN001  (Celery's bound task)
    return execute_job(job_id)


@worker_ready.connect
def start_reaper(**_: object) -> None:
    reaper.start()

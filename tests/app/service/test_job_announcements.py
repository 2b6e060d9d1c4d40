"""A waiter wakes on the announcement of its job's final status, on either
channel (Redis pub/sub; Postgres NOTIFY when the broker is not Redis), and
reads the job only when woken: no polling while it waits."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from app.auth.tokens import create_token
from app.db.models import Job
from app.db.session import transaction
from app.jobs.reading.notify import notify_finished, publish_finished
from app.jobs.reading.wait import RECHECK_S, wait_finished
from app.settings import Settings, get_settings


def queued_job(url: str) -> str:
    with transaction(url) as s:
        user, _ = create_token(s, "announcer")
        job = Job(owner_id=user.id, kind="evaluate", problem_name="evaluate", reference="x", config={})
        s.add(job)
        s.flush()
        return job.id


def finish_later(url: str, job_id: str, after_s: float) -> threading.Thread:
    """Another process's worker, in short: the final status committed, then announced."""
    def run() -> None:
        time.sleep(after_s)
        with transaction(url) as s:
            s.get(Job, job_id).status = "succeeded"
            notify_finished(s, job_id)
        publish_finished(job_id)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def wait_for_job(settings: Settings, job_id: str, timeout_s: float) -> tuple[dict, int, float]:
    reads = 0

    async def read() -> dict:
        nonlocal reads
        reads += 1
        with transaction(settings.db_url) as s:
            return {"status": s.get(Job, job_id).status}

    async def main() -> tuple[dict, int, float]:
        started = time.monotonic()
        current = await wait_finished(settings, job_id, timeout_s, read)
        return current, reads, time.monotonic() - started

    return asyncio.run(main())


@pytest.mark.parametrize("channel", ["redis", "postgres"])
def test_a_waiter_wakes_on_the_announcement_and_reads_only_then(channel, pg_url, redis_server, monkeypatch):
    broker = redis_server.url if channel == "redis" else "sqla+sqlite:////tmp/kforge-unused-broker.db"
    monkeypatch.setenv("KFORGE_BROKER_URL", broker)
    monkeypatch.setenv("KFORGE_DATABASE_URL", pg_url)
    get_settings.cache_clear()
    try:
        settings = get_settings()
        job_id = queued_job(pg_url)
        finisher = finish_later(pg_url, job_id, after_s=RECHECK_S / 2)
        current, reads, took = wait_for_job(settings, job_id, timeout_s=30)
        finisher.join()
    finally:
        get_settings.cache_clear()
    assert current == {"status": "succeeded"}
    assert RECHECK_S / 2 <= took < RECHECK_S / 2 + 1.5  # woken by the announcement, not by a re-read
    assert reads == 2  # once before waiting, once when woken: a 0.2 s poll would have read a dozen times


def test_without_an_announcement_a_waiter_reads_again_only_at_its_deadline(pg_url, redis_server):
    job_id = queued_job(pg_url)
    settings = Settings(database_url=pg_url, broker_url=redis_server.url)
    current, reads, took = wait_for_job(settings, job_id, 2.0)
    assert current == {"status": "queued"} and 2.0 <= took < 3.0 and reads == 2

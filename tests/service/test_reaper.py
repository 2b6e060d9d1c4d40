"""The reaper on PostgreSQL + a private Redis: a queued job whose message was
lost is enqueued again; one whose message still waits is left alone, so a
queue no worker consumes does not fill with copies."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
import redis
from sqlalchemy import update

from app.db.base import utcnow
from app.db.models import Job, User
from app.db.session import transaction
from app.jobs.broker import celery_app
from app.settings import get_settings
from app.worker.tasks import reap_once


@pytest.fixture
def service_settings(pg_url, redis_server, tmp_path, monkeypatch) -> Iterator[str]:
    monkeypatch.setenv("KFORGE_DATABASE_URL", pg_url)
    monkeypatch.setenv("KFORGE_BROKER_URL", redis_server.url)
    monkeypatch.setenv("KFORGE_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    celery_app.cache_clear()
    yield pg_url
    get_settings.cache_clear()
    celery_app.cache_clear()


def queued_job(db_url: str, queue: str) -> str:
    with transaction(db_url) as s:
        user = User(name=f"reaper-{queue}")
        s.add(user)
        s.flush()
        job = Job(owner_id=user.id, problem_name="p", reference="x = 1\n", queue=queue,
                  created_at=utcnow() - timedelta(hours=1))
        s.add(job)
        s.flush()
        return job.id


def age(db_url: str, job_id: str) -> None:
    """Make the job look long-queued again (as if the last enqueue were an hour ago)."""
    with transaction(db_url) as s:
        s.execute(update(Job).where(Job.id == job_id).values(heartbeat_at=utcnow() - timedelta(hours=1)))


def test_reaper_requeues_lost_messages_once(service_settings, redis_server) -> None:
    db_url = service_settings
    broker = redis.Redis.from_url(redis_server.url)
    job_id = queued_job(db_url, "gpu-test")

    assert reap_once(requeue_after_s=1) == [job_id]  # no message anywhere: enqueued
    assert broker.llen("gpu-test") == 1

    for _ in range(3):  # its message still waits: no copies, however often the reaper passes
        age(db_url, job_id)
        assert reap_once(requeue_after_s=1) == []
    assert broker.llen("gpu-test") == 1

    broker.delete("gpu-test")  # the broker lost it (restart without persistence)
    age(db_url, job_id)
    assert reap_once(requeue_after_s=1) == [job_id]
    assert broker.llen("gpu-test") == 1

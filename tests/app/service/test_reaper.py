"""The reaper on PostgreSQL + a private Redis: a queued job whose message was
lost is enqueued again; one whose message still waits is left alone, so a
queue no worker consumes does not fill with copies; a failed send marks
nothing; two reapers at once send a job once; a stale running job is sent
once per window, not on every pass."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest
import redis
from sqlalchemy import select, update

from app.db.base import utcnow
from app.db.models import Job, User
from app.db.session import transaction
from app.jobs.sending.broker import celery_app
from app.jobs.sending.reaper import candidates, reap
from app.settings import get_settings

STALE_S = 30.0


def reap_once(requeue_after_s: float) -> list[str]:
    return reap(get_settings().db_url, STALE_S, requeue_after_s)


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


def status_and_beat(db_url: str, job_id: str) -> tuple:
    with transaction(db_url) as s:
        return s.execute(select(Job.status, Job.heartbeat_at, Job.lease).where(Job.id == job_id)).one()


def test_a_send_that_fails_marks_nothing(service_settings, redis_server) -> None:
    db_url = service_settings
    job_id = queued_job(db_url, "gpu-down")
    redis_server.kill()
    with pytest.raises(redis.exceptions.ConnectionError):
        reap_once(requeue_after_s=1)
    assert status_and_beat(db_url, job_id)[1] is None  # not marked sent: the next pass sends it
    redis_server.start()
    celery_app.cache_clear()
    assert reap_once(requeue_after_s=1) == [job_id]


def test_two_reapers_at_once_send_each_job_once(service_settings, redis_server) -> None:
    db_url = service_settings
    ids = {queued_job(db_url, f"gpu-pair{i}") for i in range(3)}
    with transaction(db_url) as first:  # one reaper holds its candidates' row locks...
        taken = {r[0] for r in candidates(first, utcnow(), STALE_S, 1)}
        assert ids <= taken
        result: list[list[str]] = []
        other = threading.Thread(target=lambda: result.append(reap_once(requeue_after_s=1)))
        other.start()
        other.join(20)
    assert result == [[]]  # ...the other skips them instead of waiting or sending them too


def test_a_stale_running_job_is_sent_once_per_window(service_settings, redis_server) -> None:
    db_url = service_settings
    broker = redis.Redis.from_url(redis_server.url)
    job_id = queued_job(db_url, "gpu-stale")
    with transaction(db_url) as s:
        s.execute(update(Job).where(Job.id == job_id).values(status="running", lease="dead-worker",
                                                             heartbeat_at=utcnow() - timedelta(hours=1)))
    assert reap_once(requeue_after_s=60) == [job_id]
    status, beat, lease = status_and_beat(db_url, job_id)
    assert status == "queued" and lease is None and utcnow() - beat < timedelta(seconds=30)
    for _ in range(3):
        assert reap_once(requeue_after_s=60) == []
    assert broker.llen("gpu-stale") == 1

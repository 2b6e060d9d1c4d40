"""GET /v1/jobs/{id} from the API process's read cache on PostgreSQL (app/jobs/reading/read_cache.py):
a kept answer is byte for byte the database's, another owner still gets 404, a write by
another process (a worker's UPDATE) is seen as soon as its NOTIFY arrives, this process's
own write (a cancel) at once, and while the listener is gone every read goes to the database."""

from __future__ import annotations

import time
from collections.abc import Iterator

import psycopg
import pytest
from fastapi.testclient import TestClient

from app.jobs.reading import read_cache
from app.settings import Settings
from tests.app.service.test_hot_routes import app_for, seed


@pytest.fixture
def pg_service(request, tmp_path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    monkeypatch.setenv("KFORGE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("KFORGE_DATABASE_URL", request.getfixturevalue("pg_url"))
    monkeypatch.setenv("KFORGE_BROKER_URL", request.getfixturevalue("redis_server").url)
    monkeypatch.setenv("KFORGE_RATE_LIMIT_PER_S", "0")
    from app.settings import get_settings

    get_settings.cache_clear()
    yield get_settings()
    get_settings.cache_clear()


def _until(predicate, timeout_s: float = 10.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _cache() -> read_cache.ReadCache:
    return list(read_cache._CACHES.values())[-1]


def _set_status(settings: Settings, job_id: str, status: str) -> None:
    """A write on a connection of its own, as a worker's process makes it (no session of this process)."""
    with psycopg.connect(settings.db_url.replace("+psycopg", ""), autocommit=True) as conn:
        conn.execute("UPDATE jobs SET status = %s WHERE id = %s", (status, job_id))


def test_answers_are_kept_and_follow_every_write(pg_service: Settings) -> None:
    settings = pg_service
    mine, theirs, job_id = seed(settings)
    me, them = {"Authorization": f"Bearer {mine}"}, {"Authorization": f"Bearer {theirs}"}
    plain = TestClient(app_for(settings, hot=False))
    with TestClient(app_for(settings, hot=True)) as client:
        first = client.get(f"/v1/jobs/{job_id}", headers=me)
        assert first.status_code == 200
        _until(lambda: _cache().up)
        client.get(f"/v1/jobs/{job_id}", headers=me)
        assert _cache().get(job_id) is not None
        kept = client.get(f"/v1/jobs/{job_id}", headers=me)
        assert kept.content == plain.get(f"/v1/jobs/{job_id}", headers=me).content  # byte for byte
        assert client.get(f"/v1/jobs/{job_id}", headers=them).status_code == 404   # kept, not theirs

        _set_status(settings, job_id, "queued")        # another process: heard through NOTIFY
        _until(lambda: client.get(f"/v1/jobs/{job_id}", headers=me).json()["status"] == "queued", 5.0)
        _until(lambda: _cache().get(job_id) is not None)
        cancelled = client.post(f"/v1/jobs/{job_id}/cancel", headers=me)
        assert cancelled.status_code == 200, cancelled.text
        assert client.get(f"/v1/jobs/{job_id}", headers=me).json()["status"] == "cancelled"  # no wait: own write

        # the listener's connection killed: nothing is served from the cache until it is back
        with psycopg.connect(settings.db_url.replace("+psycopg", ""), autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                         "WHERE query LIKE 'LISTEN kforge_job_changed%'")
        _until(lambda: not _cache().up, 5.0)
        _set_status(settings, job_id, "succeeded")
        assert client.get(f"/v1/jobs/{job_id}", headers=me).json()["status"] == "succeeded"
        _until(lambda: _cache().up, 10.0)
        assert client.get(f"/v1/jobs/{job_id}", headers=me).json()["status"] == "succeeded"


def test_a_reading_overtaken_by_a_change_is_not_kept() -> None:
    cache = read_cache.ReadCache()
    cache.set_up(True)
    started = cache.begin()
    cache.changed("j1")                  # announced while the reading was in flight
    cache.put("j1", started, 1, b"old")
    assert cache.get("j1") is None
    cache.put("j1", cache.begin(), 1, b"new")
    assert cache.get("j1") == (1, b"new")
    cache.changed("*")                   # a user row changed: everything goes
    assert cache.get("j1") is None
    cache.set_up(False)
    cache.put("j1", cache.begin(), 1, b"x")
    assert cache.get("j1") is None       # nothing is kept while nobody listens


def test_the_cache_is_bounded_in_bytes() -> None:
    cache = read_cache.ReadCache(max_bytes=10)
    cache.set_up(True)
    for i in range(5):
        cache.put(f"j{i}", cache.begin(), 1, b"abcd")
    assert cache.bytes <= 10 and cache.get("j4") is not None and cache.get("j0") is None

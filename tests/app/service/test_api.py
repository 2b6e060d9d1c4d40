"""The REST API on PostgreSQL: auth, owners, validation, 100 concurrent submissions."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import psycopg
import redis

from tests.app.service.conftest import token

REF = open("problems/level1/1_relu_scale.py").read()


def test_owners_see_only_their_jobs_and_admins_see_all(procs, service_env):
    url = procs.api()
    alice, bob = token(service_env, "alice"), token(service_env, "bob")
    admin = token(service_env, "root", admin=True)
    h = lambda t: {"Authorization": f"Bearer {t}"}  # noqa: E731
    created = httpx.post(f"{url}/v1/jobs", json={"reference": REF, "max_rounds": 0}, headers=h(alice))
    assert created.status_code == 201 and created.json()["status"] == "queued"
    job_id = created.json()["id"]
    assert httpx.get(f"{url}/v1/jobs/{job_id}", headers=h(alice)).json()["id"] == job_id
    assert httpx.get(f"{url}/v1/jobs/{job_id}", headers=h(bob)).status_code == 404
    assert httpx.post(f"{url}/v1/jobs/{job_id}/cancel", headers=h(bob)).status_code == 404
    assert httpx.get(f"{url}/v1/jobs", headers=h(bob)).json()["total"] == 0
    assert httpx.get(f"{url}/v1/jobs/{job_id}", headers=h(admin)).status_code == 200
    assert httpx.get(f"{url}/v1/jobs?owner=alice", headers=h(admin)).json()["total"] == 1
    cancelled = httpx.post(f"{url}/v1/jobs/{job_id}/cancel", headers=h(alice))
    assert cancelled.json()["status"] == "cancelled"
    assert httpx.post(f"{url}/v1/jobs/{job_id}/cancel", headers=h(alice)).status_code == 409


def test_bad_input_is_a_clear_4xx(procs, service_env):
    url = procs.api()
    h = {"Authorization": f"Bearer {token(service_env, 'carol')}"}
    assert httpx.post(f"{url}/v1/jobs", json={"reference": REF}).status_code == 401
    assert httpx.post(f"{url}/v1/jobs", json={"reference": REF}, headers={"Authorization": "Bearer nope"}).status_code == 401
    r = httpx.post(f"{url}/v1/jobs", json={}, headers=h)
    assert r.status_code == 422 and "exactly one of" in r.json()["detail"]
    r = httpx.post(f"{url}/v1/jobs", json={"reference": "class Model(:\n"}, headers=h)
    assert r.status_code == 422 and "reference.py:1" in r.json()["detail"]
    r = httpx.post(f"{url}/v1/jobs", json={"problem": "../../etc/passwd"}, headers=h)
    assert r.status_code == 422 and "no bundled problem" in r.json()["detail"]
    r = httpx.post(f"{url}/v1/jobs", json={"reference": REF, "max_rounds": -1, "provider": "x"}, headers=h)
    assert r.status_code == 422 and "max_rounds" in r.json()["detail"] and "provider" in r.json()["detail"]
    assert httpx.get(f"{url}/v1/jobs/does-not-exist", headers=h).status_code == 404
    assert httpx.get(f"{url}/v1/jobs?limit=0", headers=h).status_code == 422
    assert httpx.get(f"{url}/readyz").json()["status"] == "ready"
    assert "kforge_jobs_submitted_total" in httpx.get(f"{url}/metrics").text
    spec = httpx.get(f"{url}/openapi.json").json()
    assert "/v1/jobs" in spec["paths"] and "/v1/evaluate" in spec["paths"]


def test_backends_are_listed_for_clients(procs, service_env):
    """GET /v1/backends: the one list of backends (agents/backends.py) and the choices a job
    takes, behind the same authentication as the rest of /v1."""
    url = procs.api()
    assert httpx.get(f"{url}/v1/backends").status_code == 401
    got = httpx.get(f"{url}/v1/backends", headers={"Authorization": f"Bearer {token(service_env, 'erin')}"})
    assert got.status_code == 200, got.text
    body = got.json()
    assert [(b["name"], b["device"]) for b in body["backends"]] == [("triton", "gpu"), ("cuda", "gpu"), ("cpu", "cpu")]
    assert body["choices"] == ["auto", "triton", "cuda", "cpu"]
    assert all(b["language"] for b in body["backends"])
    assert "/v1/backends" in httpx.get(f"{url}/openapi.json").json()["paths"]


def test_hundred_concurrent_submissions_are_all_stored_and_enqueued(procs, service_env, redis_server, pg_url):
    url = procs.api()
    h = {"Authorization": f"Bearer {token(service_env, 'dave')}"}

    def submit(i: int) -> httpx.Response:
        return httpx.post(f"{url}/v1/jobs", json={"reference": REF, "name": f"job{i}", "max_rounds": 0},
                          headers=h, timeout=60)

    with ThreadPoolExecutor(max_workers=25) as pool:
        responses = list(pool.map(submit, range(100)))
    assert [r.status_code for r in responses] == [201] * 100
    ids = {r.json()["id"] for r in responses}
    assert len(ids) == 100
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM jobs WHERE status = 'queued'").fetchone()[0] == 100
    # No worker runs: every job's message waits in the "cpu" queue.
    assert redis.Redis.from_url(redis_server.url).llen("cpu") == 100

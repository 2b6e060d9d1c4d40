"""Ready for a fleet: two `kforge api` processes share rate-limit state in
Redis, every response carries a request id (the client's when it sends a sane
one) that the logs carry too, and timestamps are UTC with their offset, in the
responses and in PostgreSQL's columns."""

from __future__ import annotations

import asyncio
import re
from datetime import datetime

import httpx
import psycopg

from app.api.ratelimit import LocalLimiter
from tests.app.service.conftest import Procs, token

REF = open("problems/level1/1_relu_scale.py").read()


def test_rate_limit_is_per_token_and_shared_by_every_api_process(service_env, tmp_path):
    env = {**service_env, "KFORGE_RATE_LIMIT_PER_S": "0.2", "KFORGE_RATE_LIMIT_BURST": "4"}
    procs = Procs(env, tmp_path)
    try:
        a, b = procs.api(), procs.api()
        hot, cold = token(env, "hot"), token(env, "cold")
        statuses = [httpx.get(f"{url}/v1/jobs", headers={"Authorization": f"Bearer {hot}"}).status_code
                    for url in (a, b, a, b)]
        assert statuses == [200] * 4
        refused = httpx.get(f"{b}/v1/jobs", headers={"Authorization": f"Bearer {hot}"})
        assert refused.status_code == 429, refused.text
        assert 1 <= int(refused.headers["Retry-After"]) <= 5
        assert "rate limit" in refused.json()["detail"] and refused.json()["request_id"]
        assert httpx.get(f"{a}/v1/jobs", headers={"Authorization": f"Bearer {cold}"}).status_code == 200
    finally:
        procs.stop_all()


def test_in_process_limiter_refuses_past_the_burst_and_recovers():
    async def run() -> list[float]:
        limiter = LocalLimiter(rate=20, burst=3)
        waits = [await limiter.check("k") for _ in range(4)]
        other = await limiter.check("other")
        await asyncio.sleep(0.06)
        return [*waits, other, await limiter.check("k")]

    waits = asyncio.run(run())
    assert waits[:3] == [0, 0, 0] and 0 < waits[3] <= 0.05 + 1e-6
    assert waits[4] == 0 and waits[5] == 0


def test_request_ids_reach_the_response_the_error_body_and_the_log(procs, service_env, tmp_path):
    url = procs.api()
    h = {"Authorization": f"Bearer {token(service_env, 'ids')}"}
    echoed = httpx.get(f"{url}/v1/jobs", headers={**h, "X-Request-ID": "client-abc.123"})
    assert echoed.headers["x-request-id"] == "client-abc.123"
    made = httpx.get(f"{url}/v1/jobs/{'0' * 8}-0000-4000-8000-{'0' * 12}", headers=h)
    assert made.status_code == 404 and re.fullmatch(r"[0-9a-f]{32}", made.headers["x-request-id"])
    assert made.json()["request_id"] == made.headers["x-request-id"]
    # A header that could forge log lines is replaced, not echoed.
    forged = httpx.get(f"{url}/healthz", headers={"X-Request-ID": "a b\tc"})
    assert forged.headers["x-request-id"] != "a b\tc"
    log = (tmp_path / "api.log").read_text()
    assert "[client-abc.123]" in log and f"[{made.headers['x-request-id']}]" in log
    assert h["Authorization"].split()[1] not in log


def test_timestamps_are_utc_with_offset_in_responses_and_columns(procs, service_env, pg_url):
    url = procs.api()
    h = {"Authorization": f"Bearer {token(service_env, 'tz')}"}
    job = httpx.post(f"{url}/v1/jobs", json={"reference": REF, "max_rounds": 0}, headers=h).json()
    cancelled = httpx.post(f"{url}/v1/jobs/{job['id']}/cancel", headers=h).json()
    for stamp in (job["created_at"], cancelled["finished_at"]):
        parsed = datetime.fromisoformat(stamp)
        assert parsed.utcoffset() is not None and parsed.utcoffset().total_seconds() == 0, stamp
    with psycopg.connect(pg_url) as conn:
        types = dict(conn.execute("SELECT table_name || '.' || column_name, data_type FROM information_schema.columns "
                                  "WHERE column_name LIKE '%%\\_at' AND table_name IN "
                                  "('users', 'api_tokens', 'jobs', 'candidates')").fetchall())
    assert len(types) == 9 and set(types.values()) == {"timestamp with time zone"}, types


def test_connections_the_database_dropped_cost_no_request(procs, service_env, pg_url):
    """The API's pool has no pre-ping; a unit of work that meets a closed connection runs again."""
    url = procs.api()
    h = {"Authorization": f"Bearer {token(service_env, 'resilient')}"}
    job = httpx.post(f"{url}/v1/jobs", json={"reference": REF, "max_rounds": 0}, headers=h).json()
    for _ in range(20):  # fill both processes' pools
        assert httpx.get(f"{url}/v1/jobs/{job['id']}", headers=h).status_code == 200
    dbname = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        killed = conn.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                              "WHERE datname = %s AND pid <> pg_backend_pid()", (dbname,)).fetchone()[0]
    assert killed > 0
    reads = [httpx.get(f"{url}/v1/jobs/{job['id']}", headers=h).status_code for _ in range(10)]
    writes = [httpx.post(f"{url}/v1/jobs", json={"reference": REF, "max_rounds": 0}, headers=h).status_code
              for _ in range(5)]
    assert reads == [200] * 10 and writes == [201] * 5

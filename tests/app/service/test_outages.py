"""The fleet under outages, on a Redis and a PostgreSQL of the test's own
(killed and started by it), with an API and two real workers: Redis killed
without and with its append-only file, PostgreSQL stopped immediately; jobs
submitted before and during each outage, and read during it. Nothing is lost
or duplicated, no answer is a 5xx other than 503 (which carries Retry-After,
the error body and the request id), /readyz and /metrics name the dependency
that is down, and every job is done within 10 s of the dependency's return."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime

import httpx
import psycopg
import pytest

from tests.app.service.conftest import ROOT, Procs, RedisServer, token, wait_for
from tests.app.service.own_postgres import OwnPostgres

# The cheapest job there is: an evaluation whose candidate does not parse (the judge says "fail" at once; the
# job succeeds). It takes the same path as any job: claim, heartbeat, judge, finish, announce.
JOB = {"reference": (ROOT / "problems/level1/1_relu_scale.py").read_text(), "device": "cpu",
       "candidate": "import torch\nclass ModelNew(torch.nn.Module:\n    pass\n"}
BACK_WITHIN_S = 10.0
OUTAGE_S = 4.0


@pytest.fixture
def own_postgres() -> Iterator[OwnPostgres]:
    server = OwnPostgres()
    server.init()
    yield server
    server.remove()


class Client:
    """Every answer is kept; a 503 must say when to retry, in the one error shape."""

    def __init__(self, url: str, bearer: str) -> None:
        self.url, self.headers = url, {"Authorization": f"Bearer {bearer}"}
        self.statuses: list[int] = []
        self.accepted: list[str] = []

    def call(self, method: str, path: str, **kw: object) -> httpx.Response:
        r = httpx.request(method, self.url + path, headers=self.headers, timeout=30, **kw)
        self.statuses.append(r.status_code)
        if r.status_code == 503:
            assert int(r.headers["Retry-After"]) >= 1, r.headers
            body = r.json()
            assert body["detail"] and body["request_id"] == r.headers["x-request-id"], body
        return r

    def submit(self) -> bool:
        r = self.call("POST", "/v1/evaluate", json=JOB)
        assert r.status_code in (202, 503), r.text
        if r.status_code == 202:
            self.accepted.append(r.json()["id"])
        return r.status_code == 202


def jobs(db_url: str) -> dict[str, tuple[str, datetime | None]]:
    with psycopg.connect(db_url) as conn:
        return {str(i): (s, f) for i, s, f in conn.execute("SELECT id, status, finished_at FROM jobs").fetchall()}


def outage(client: Client, db_url: str, dependency: str, kill: Callable[[], None], restore: Callable[[], None]) -> None:
    first = len(client.accepted)
    for _ in range(4):  # two run at once, two wait in the queue
        assert client.submit()
    kill()
    down_at = time.monotonic()
    refused = sum(not client.submit() for _ in range(2))
    for job_id in client.accepted[first:]:
        assert client.call("GET", f"/v1/jobs/{job_id}").status_code in (200, 503)
    ready = client.call("GET", "/readyz")
    assert ready.status_code == 503 and f"{dependency}: unreachable" in ready.json()["detail"], ready.text
    assert f'kforge_dependency_up{{dependency="{dependency}"}} 0.0' in client.call("GET", "/metrics").text
    time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - down_at)))
    restore()
    back = datetime.now().astimezone()
    for _ in range(refused):  # the client retries what was refused
        wait_for(client.submit, 30, "a refused submission to be accepted", every=1.0)
    mine = set(client.accepted[first:])
    done = wait_for(lambda: all(jobs(db_url)[j][0] in ("succeeded", "failed") for j in mine) and jobs(db_url),
                    BACK_WITHIN_S + 60, f"every job after the {dependency} outage")
    assert {j: done[j][0] for j in mine} == dict.fromkeys(mine, "succeeded")
    lag = {j: (done[j][1] - back).total_seconds() for j in mine}
    print(f"{dependency} outage: {len(mine)} jobs ({refused} refused meanwhile), the last done "
          f"{max(lag.values()):.1f} s after the return")
    late = {j: s for j, s in lag.items() if s > BACK_WITHIN_S}
    assert not late, f"done more than {BACK_WITHIN_S} s after the {dependency} returned: {late}"


def test_no_job_lost_or_duplicated_through_redis_and_postgres_outages(own_postgres, tmp_path) -> None:
    redis = RedisServer(tmp_path)
    redis.start()
    db_url = own_postgres.url()
    env = {**os.environ, "KFORGE_DATABASE_URL": db_url, "KFORGE_BROKER_URL": redis.url,
           "KFORGE_DATA_DIR": str(tmp_path / "data"), "KFORGE_HEARTBEAT_S": "1", "KFORGE_STALE_AFTER_S": "6",
           "KFORGE_DEVICE": "cpu", "KFORGE_RATE_LIMIT_PER_S": "0", "KFORGE_API_WORKERS": "1"}
    subprocess.run([sys.executable, "-m", "app.cli.main", "db", "upgrade"], cwd=ROOT, env=env, check=True,
                   capture_output=True)
    procs = Procs(env, tmp_path)
    try:
        client = Client(procs.api(), token(env, "outages"))
        procs.worker("w1")
        procs.worker("w2")
        assert client.submit()  # warm: both workers are up once it is done
        wait_for(lambda: jobs(db_url)[client.accepted[0]][0] == "succeeded", 120, "a first job")

        outage(client, db_url, "broker", redis.kill, redis.start)  # no persistence: queued messages are lost

        redis.kill()
        redis.appendonly = True
        redis.start()
        wait_for(lambda: client.call("GET", "/readyz").status_code == 200, 30, "ready with Redis' AOF on")
        outage(client, db_url, "broker", redis.kill, redis.start)  # its append-only file keeps the queue

        outage(client, db_url, "database", own_postgres.stop_immediately, own_postgres.start)

        assert set(jobs(db_url)) == set(client.accepted), "a job was made by a request that was refused, or lost"
        assert len(client.accepted) == len(set(client.accepted)) == 1 + 3 * 6
        with psycopg.connect(db_url) as conn:
            doubled = conn.execute("SELECT job_id, attempt_id FROM candidates GROUP BY 1, 2 HAVING count(*) > 1")
            assert doubled.fetchall() == []
        assert {s for s in client.statuses if s >= 500} <= {503}, sorted(set(client.statuses))
    finally:
        procs.stop_all()
        redis.kill()

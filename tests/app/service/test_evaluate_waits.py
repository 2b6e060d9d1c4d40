"""POST /v1/evaluate waits for its verdict without holding a thread: 50 waits
in flight on one API process (more than its 10 database threads) leave the
other routes answering, and each wait returns as soon as its job's final status
is announced (Redis pub/sub), not at its next re-read (app/jobs/reading/wait.py).

Real peers: PostgreSQL, a private Redis, `kforge api` and `kforge worker`
processes. 47 of the waits end by cancellation (a queued job is cancelled at
once and announced after the commit); the last one is judged by a real worker.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor, wait

import httpx

from app.jobs.reading.wait import RECHECK_S
from tests.app.service.conftest import ROOT, token, wait_for

REFERENCE = (ROOT / "problems/level1/1_relu_scale.py").read_text()
HONEST = (ROOT / "problems/level1/solutions/relu_scale/correct_triton.py").read_text()
WAITS, JUDGED = 50, 1


def timed_get(client: httpx.Client, path: str) -> float:
    started = time.monotonic()
    r = client.get(path)
    assert r.status_code == 200, r.text
    return time.monotonic() - started


def test_fifty_evaluate_waits_leave_the_api_responsive_and_wake_on_completion(procs, service_env):
    procs.env = {**service_env, "KFORGE_API_WORKERS": "1"}  # one process: every wait on one event loop
    url = procs.api()
    headers = {"Authorization": f"Bearer {token(procs.env, 'waiter')}"}
    body = {"reference": REFERENCE, "candidate": HONEST, "device": "cpu", "wait_s": 300}

    def evaluate(_: int) -> tuple[httpx.Response, float]:
        r = httpx.post(f"{url}/v1/evaluate", json=body, headers=headers, timeout=400)
        return r, time.monotonic()

    with ThreadPoolExecutor(WAITS) as pool, httpx.Client(base_url=url, headers=headers, timeout=10) as client:
        futures = [pool.submit(evaluate, i) for i in range(WAITS)]
        listed = wait_for(lambda: (p := client.get("/v1/jobs", params={"kind": "evaluate", "limit": 200}).json())
                          ["total"] == WAITS and p, 60, "all evaluate jobs stored")
        # No worker runs yet: all 50 requests are waiting; the other routes answer promptly.
        latencies = []
        for _ in range(10):
            latencies += [timed_get(client, "/healthz"), timed_get(client, "/v1/jobs?limit=50"),
                          timed_get(client, f"/v1/jobs/{listed['items'][0]['id']}")]
        assert not any(f.done() for f in futures), "a wait returned before its job finished"
        assert max(latencies) < 1.0, f"other routes stalled behind the waits: {max(latencies):.2f} s"

        # Cancel all but JUDGED: their waits return at once (announced), well before a re-read would find them.
        ids = [item["id"] for item in listed["items"]]
        cancelled, judged = ids[JUDGED:], ids[:JUDGED]
        for job_id in cancelled:
            assert client.post(f"/v1/jobs/{job_id}/cancel").status_code == 200
        cancel_done = time.monotonic()
        done, _ = wait(futures, timeout=RECHECK_S - 1)
        assert len(done) == len(cancelled), f"{len(done)} waits returned after {len(cancelled)} cancellations"
        for f in done:
            r, returned_at = f.result()
            assert r.status_code == 200 and r.json()["status"] == "cancelled" and r.json()["id"] in cancelled
            assert returned_at - cancel_done < 2.0, "a cancelled job's wait returned late"

        # A real worker judges the rest; their waits return with the verdict.
        procs.worker("w1")
        for f in futures:
            r, _ = f.result(timeout=300)
            assert r.status_code == 200, r.text
        verdicts = {f.result()[0].json()["id"]: f.result()[0].json() for f in futures}
        for job_id in judged:
            assert verdicts[job_id]["status"] == "succeeded" and verdicts[job_id]["result"]["verdict"] == "pass"
        assert max(timed_get(client, "/healthz") for _ in range(3)) < 1.0

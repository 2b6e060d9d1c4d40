"""Workers on PostgreSQL + Redis: a worker killed with SIGKILL mid-job, and
Redis restarted mid-job; the job finishes with no candidate lost or duplicated."""

from __future__ import annotations

import os
import signal

import httpx
import psycopg

from tests.app.service import scripted_llm
from tests.app.service.conftest import token, wait_for

JOB = {"problem": "level1/1_relu_scale", "provider": "openai", "model": "gpt-4o", "max_rounds": 3,
       "candidates_per_round": 2, "max_repairs": 0, "device": "cpu",
       "backend": "triton"}  # the scripted model writes Triton (auto would pick cpu here)


def candidates(pg_url: str, job_id: str) -> list[str]:
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT attempt_id FROM candidates WHERE job_id = %s ORDER BY id", (job_id,)).fetchall()
    return [r[0] for r in rows]


def job(url: str, h: dict, job_id: str) -> dict:
    return httpx.get(f"{url}/v1/jobs/{job_id}", headers=h, timeout=10).json()


def assert_complete(url: str, h: dict, job_id: str, pg_url: str) -> dict:
    done = job(url, h, job_id)
    assert done["status"] == "succeeded", done
    ids = candidates(pg_url, job_id)
    assert len(ids) == len(set(ids)), f"duplicated candidates: {ids}"
    llm = sorted(i for i in ids if not i.startswith("r0-"))
    assert llm == [f"r{r}-c{c}" for r in (1, 2, 3) for c in (0, 1)], f"candidates lost: {ids}"
    assert all(c["verdict"] == "pass" for r in done["rounds"] for c in r["candidates"] if c["source"] == "llm")
    # What the judge saw is kept for passing checks too (the dashboard shows it).
    details = done["rounds"][-1]["candidates"][0]["check_details"]
    assert "torch ops run in forward" in details["no_reference_ops"] and "skipped" in details["kernel_does_work"]
    assert done["best_attempt_id"] in ids
    return done


def test_worker_killed_mid_job_resumes_on_another(procs, service_env, pg_url):
    with scripted_llm.server(coder_delay_s=1.5) as llm:
        url = procs.api()
        h = {"Authorization": f"Bearer {token(service_env, 'erin')}"}
        first = procs.worker("first")
        job_id = httpx.post(f"{url}/v1/jobs", json={**JOB, "base_url": llm.openai_base_url}, headers=h).json()["id"]
        wait_for(lambda: any(i.startswith("r1-") for i in candidates(pg_url, job_id)), 180, "a first LLM candidate")
        before = candidates(pg_url, job_id)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        assert job(url, h, job_id)["status"] == "running"
        procs.worker("second")
        wait_for(lambda: job(url, h, job_id)["status"] in ("succeeded", "failed"), 300, "the job to finish")
        done = assert_complete(url, h, job_id, pg_url)
        assert set(before) <= set(candidates(pg_url, job_id))
        assert done["runs"] == 2


def test_redis_restart_mid_job(procs, service_env, pg_url, redis_server):
    with scripted_llm.server(coder_delay_s=1.0) as llm:
        url = procs.api()
        h = {"Authorization": f"Bearer {token(service_env, 'frank')}"}
        procs.worker("only")
        job_id = httpx.post(f"{url}/v1/jobs", json={**JOB, "base_url": llm.openai_base_url}, headers=h).json()["id"]
        wait_for(lambda: any(i.startswith("r1-") for i in candidates(pg_url, job_id)), 180, "a first LLM candidate")
        redis_server.kill()
        redis_server.start()
        wait_for(lambda: job(url, h, job_id)["status"] in ("succeeded", "failed"), 300, "the job to finish")
        assert_complete(url, h, job_id, pg_url)
        # The worker reconnected: a job submitted after the restart runs too.
        again = httpx.post(f"{url}/v1/jobs", json={"problem": "level1/1_relu_scale", "max_rounds": 0}, headers=h)
        wait_for(lambda: job(url, h, again.json()["id"])["status"] == "succeeded", 180, "a job after the restart")

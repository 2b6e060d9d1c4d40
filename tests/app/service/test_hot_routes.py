"""GET /v1/jobs/{id} and POST /v1/jobs past FastAPI's routing (app/api/hot_routes.py)
answer byte for byte what FastAPI's routes answer, on PostgreSQL + Redis and on
SQLite: a job with candidates, another owner's job, a non-id, no token, a
bad reference, an invalid body, another content type; and a submission is
stored and its message sent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.api.hot_routes import HotRoutes
from app.api.main import create_app
from app.auth.tokens import create_token
from app.db.migrate import upgrade_database
from app.db.models import Candidate, Job
from app.db.session import engine_for
from app.deps import settings as settings_dep
from app.jobs.sending.broker import celery_app
from app.settings import Settings, get_settings

REF = open("problems/level1/1_relu_scale.py").read()


@pytest.fixture(params=["postgresql", "sqlite"])
def service(request, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Settings, str | None]]:
    """Settings for a migrated database, and the Redis broker's URL on PostgreSQL (the embedded broker on SQLite)."""
    monkeypatch.setenv("KFORGE_DATA_DIR", str(tmp_path))
    if request.param == "postgresql":
        broker = request.getfixturevalue("redis_server").url
        monkeypatch.setenv("KFORGE_DATABASE_URL", request.getfixturevalue("pg_url"))
        monkeypatch.setenv("KFORGE_BROKER_URL", broker)
    else:
        broker = None
        monkeypatch.setenv("KFORGE_DATABASE_URL", f"sqlite:///{tmp_path}/hot.db")
    get_settings.cache_clear()
    celery_app.cache_clear()
    settings = get_settings()
    if broker is None:
        upgrade_database(settings.db_url)
    yield settings, broker
    get_settings.cache_clear()
    celery_app.cache_clear()


def app_for(settings: Settings, hot: bool) -> FastAPI:
    app = create_app()
    if not hot:  # FastAPI's routes answer everything (the middleware stack is built at the first request)
        app.user_middleware = [m for m in app.user_middleware if m.cls is not HotRoutes]
    app.dependency_overrides[settings_dep] = lambda: settings
    return app


def seed(settings: Settings) -> tuple[str, str, str]:
    """Two users' tokens and the first one's job with candidates in two rounds."""
    with Session(engine_for(settings.db_url)) as s, s.begin():
        owner, mine = create_token(s, "owner")
        _, theirs = create_token(s, "other")
        job = Job(owner_id=owner.id, problem_name="p", reference=REF, config={"max_rounds": 2}, status="succeeded",
                  trajectory={"rounds": [{"index": 0, "plan": [{"title": "fuse"}]}], "usage": {"cost_usd": 0.5}},
                  result={"best": None, "ratio": 1 / 3}, best_attempt_id="a1", best_speedup=2.5)
        s.add(job)
        s.flush()
        for i, rnd in enumerate((0, 0, 1)):
            s.add(Candidate(job_id=job.id, attempt_id=f"a{i}", round=rnd, strategy="s", source="llm", verdict="pass",
                            reasons=[], checks={"correct": "pass"}, speedup=1.5 + i, timing={"median_ms": 1e-7 * (i + 1)},
                            code="...", input_tokens=10, output_tokens=20, cost_usd=0.01, elapsed_s=2.0))
        return mine, theirs, job.id


def same(a, b) -> None:  # noqa: ANN001  (both sent the same X-Request-ID)
    assert (a.status_code, a.content) == (b.status_code, b.content), (a.text, b.text)
    assert a.headers["content-type"] == b.headers["content-type"]
    assert a.headers.get("www-authenticate") == b.headers.get("www-authenticate")


def test_reads_answer_what_fastapis_route_answers(service) -> None:  # noqa: ANN001
    settings, _ = service
    mine, theirs, job_id = seed(settings)
    with TestClient(app_for(settings, True)) as hot, TestClient(app_for(settings, False)) as slow:
        for path, token in ((f"/v1/jobs/{job_id}", mine), (f"/v1/jobs/{job_id}", theirs), ("/v1/jobs/not-an-id", mine),
                            (f"/v1/jobs/{job_id}", None), (f"/v1/jobs/{job_id}", "kf_no-such-token")):
            headers = {"X-Request-ID": "one-id", **({"Authorization": f"Bearer {token}"} if token else {})}
            same(hot.get(path, headers=headers), slow.get(path, headers=headers))
        detail = hot.get(f"/v1/jobs/{job_id}", headers={"Authorization": f"Bearer {mine}"})
        assert detail.json()["candidates_count"] == 3 and detail.json()["created_at"].endswith("Z")
        assert detail.headers["x-request-id"]


def test_submissions_answer_what_fastapis_route_answers(service) -> None:  # noqa: ANN001
    settings, broker = service
    mine, _, _ = seed(settings)
    auth = {"Authorization": f"Bearer {mine}"}
    with TestClient(app_for(settings, True), headers=auth) as hot, TestClient(app_for(settings, False), headers=auth) as slow:
        for body, headers in ((json.dumps({"reference": "def broken(:", "max_rounds": 0}), {}),  # 400
                              (json.dumps({"max_rounds": 0}), {}), ("{not json", {}), ("[]", {}),  # 422s
                              (json.dumps({"problem": "level1/1_relu_scale", "max_rounds": 99}), {}),
                              (json.dumps({"problem": "level1/1_relu_scale"}), {"content-type": "text/plain"}),
                              (json.dumps({"problem": "level1/1_relu_scale"}), {"Authorization": "Bearer nope"})):
            headers = {"content-type": "application/json", "X-Request-ID": "one-id", **headers}
            same(hot.post("/v1/jobs", content=body, headers=headers), slow.post("/v1/jobs", content=body, headers=headers))
        made = [c.post("/v1/jobs", json={"reference": REF, "name": "relu", "max_rounds": 0}) for c in (hot, slow)]
    assert [r.status_code for r in made] == [201, 201]
    a, b = (r.json() for r in made)
    assert {k for k in a if a[k] != b[k]} == {"id", "created_at"} and list(a) == list(b)
    with Session(engine_for(settings.db_url)) as s:
        assert s.scalar(select(func.count()).select_from(Job).where(Job.problem_name == "relu")) == 2
    if broker:  # both were sent: the hot path from the event loop (app/jobs/sending/loop_send.py), the route likewise
        sent = redis.Redis.from_url(broker).lrange("cpu", 0, -1)
        assert sorted(a["id"] in m.decode() or b["id"] in m.decode() for m in sent) == [True, True]

"""The API's Core read paths give exactly what the ORM-built views give (the
dashboard and MCP use those), for a job with candidates in two rounds; on
PostgreSQL the detail is read on the event loop (app/db/loop_reads.py), on
SQLite through the session, and both agree."""

from __future__ import annotations

import asyncio

import pytest

from app.api.deps import Db
from app.auth.tokens import create_token
from app.db.migrate import upgrade_database
from app.db.models import Candidate, Job
from app.errors import NotFound
from app.jobs.reading import core_views as views
from app.jobs.reading import views as svc


@pytest.fixture(params=["postgresql", "sqlite"])
def db_url(request, tmp_path):
    if request.param == "postgresql":
        return request.getfixturevalue("pg_url")
    url = f"sqlite:///{tmp_path}/views.db"
    upgrade_database(url)
    return url


def test_core_views_match_the_orm_views(db_url):
    db = Db(db_url)

    def seed(s):
        user, _ = create_token(s, "viewer")
        job = Job(owner_id=user.id, problem_name="p", reference="x", config={"max_rounds": 2}, status="succeeded",
                  trajectory={"rounds": [{"index": 0, "plan": [{"title": "fuse"}]}], "usage": {"cost_usd": 0.5}},
                  result={"best": None})
        s.add(job)
        s.flush()
        for i, rnd in enumerate((0, 0, 1)):
            s.add(Candidate(job_id=job.id, attempt_id=f"a{i}", round=rnd, strategy="s", source="llm", verdict="pass",
                            reasons=[], checks={"correct": "pass"}, speedup=1.5 + i, timing={"median_ms": 1.0},
                            code="...", input_tokens=10, output_tokens=20, cost_usd=0.01, elapsed_s=2.0))
        return user, job.id

    user, job_id = db.run_sync(seed)
    orm = db.run_sync(lambda s: svc.job_detail(svc.visible_job(s, user, job_id, detail=True)))
    core = asyncio.run(views.job_detail(db.rows_many, user, job_id))
    assert core == orm and core["candidates_count"] == 3 and [r["index"] for r in core["rounds"]] == [0, 1]
    assert core["rounds"][0]["plan"] == ["fuse"] and core["created_at"].utcoffset().total_seconds() == 0
    page = db.run_sync(lambda s: views.job_page(s, user, "succeeded", "optimize", 10, 0), True)
    assert page["total"] == 1 and page["items"][0] == {k: orm[k] for k in page["items"][0]}


def test_detail_of_another_owners_job_or_a_non_id_is_missing(db_url):
    db = Db(db_url)

    def seed(s):
        owner, _ = create_token(s, "owner")
        other, _ = create_token(s, "other")
        admin, _ = create_token(s, "root", admin=True)
        job = Job(owner_id=owner.id, problem_name="p", reference="x", config={})
        s.add(job)
        s.flush()
        return other, admin, job.id

    other, admin, job_id = db.run_sync(seed)

    async def reads():
        assert (await views.job_detail(db.rows_many, admin, job_id))["candidates_count"] == 0
        for user, wanted in ((other, job_id), (admin, "not-an-id"), (admin, "00000000-0000-0000-0000-000000000000")):
            with pytest.raises(NotFound):
                await views.job_detail(db.rows_many, user, wanted)

    asyncio.run(reads())

"""A submission on PostgreSQL is one INSERT from the event loop
(app/jobs/create.py: submit_job): it stores the row the ORM path stores,
answers the summary the ORM path answers, hands the job to the broker only
after the INSERT, and a retried INSERT (a pooled connection the server had
closed) cannot make a second job."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import func, select

from app.api.deps import Db
from app.auth.tokens import create_token
from app.db.loop_reads import loop_pool
from app.db.models import Job
from app.errors import BadRequest
from app.jobs.create import NEW_JOB, create_job, submit_job
from app.jobs.reading.views import job_out
from app.schemas import JobCreate

REF = open("problems/level1/1_relu_scale.py").read()


class LoopUnit:
    """Db's write on the loop, with the broker replaced by a list."""

    on_loop = True

    def __init__(self, url: str) -> None:
        self.url, self.sent, self.params = url, [], []

    async def write(self, statement: Any, params: dict[str, Any], queued: list[tuple[str, str]]) -> None:
        await loop_pool(self.url).execute(statement, params)
        self.params.append(params)
        self.sent += queued


def test_a_submission_on_the_loop_stores_and_answers_what_the_orm_path_does(pg_url):
    db, unit = Db(pg_url), LoopUnit(pg_url)
    user = db.run_sync(lambda s: create_token(s, "submitter")[0])
    spec = JobCreate(reference=REF, name="relu", max_rounds=0, gpu_kind="h100", provider="offline")

    async def submit_twice() -> tuple[dict, int]:
        out = await submit_job(unit, user, spec)
        again = await loop_pool(pg_url).execute(NEW_JOB, unit.params[-1])  # the retry after a dropped connection
        return out, again

    out, again = asyncio.run(submit_twice())
    assert again == 0 and unit.sent == [(out["id"], "gpu-h100")]
    stored = db.run_sync(lambda s: job_out(s.get(Job, out["id"]), 0, owner="submitter"), True)
    assert out == stored and out["status"] == "queued" and out["created_at"].utcoffset().total_seconds() == 0
    orm = db.run_sync(lambda s: job_out(create_job(s, user, spec), 0, owner="submitter"))
    differ = {k for k in out if out[k] != orm[k]}
    assert differ == {"id", "created_at"}, differ

    def columns(job_id: str) -> dict[str, Any]:
        def read(s):
            job = s.get(Job, job_id)
            return {c.key: getattr(job, c.key) for c in Job.__table__.c if c.key not in ("id", "created_at")}
        return db.run_sync(read, True)

    assert columns(out["id"]) == columns(orm["id"])
    assert columns(out["id"])["trajectory"] is None and columns(out["id"])["config"]["max_rounds"] == 0
    count = db.run_sync(lambda s: s.scalar(select(func.count()).select_from(Job)), True)
    assert count == 2


def test_a_bad_reference_writes_and_sends_nothing(pg_url):
    db, unit = Db(pg_url), LoopUnit(pg_url)
    user = db.run_sync(lambda s: create_token(s, "careless")[0])
    with pytest.raises(BadRequest):
        asyncio.run(submit_job(unit, user, JobCreate(reference="def broken(:", max_rounds=0)))
    assert unit.sent == [] and db.run_sync(lambda s: s.scalar(select(func.count()).select_from(Job)), True) == 0

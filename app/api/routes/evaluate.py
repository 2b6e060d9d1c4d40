"""/v1/evaluate: judge a given candidate against a reference (a job of kind
"evaluate", run by a worker like any other)."""

from __future__ import annotations

import asyncio
import time

from fastapi import APIRouter, Response, status
from sqlalchemy.orm import Session

from ...schemas import EvaluateCreate, EvaluateOut
from ...services import jobs as svc
from ..deps import CurrentUser, DbDep, RateLimit, SettingsDep, enqueue_after_commit
from ..errors import responses
from ..metrics import JOBS_SUBMITTED

router = APIRouter(prefix="/v1/evaluate", tags=["evaluate"], dependencies=[RateLimit],
                   responses=responses(400, 401, 422, 429, 500))


def create(session: Session, user, body: EvaluateCreate) -> dict:  # noqa: ANN001
    job = svc.create_evaluation(session, user, body)
    enqueue_after_commit(session, job)
    return {"id": job.id, "status": job.status, "queue": job.queue}


def outcome(session: Session, user, job_id: str) -> dict:  # noqa: ANN001
    job = svc.visible_job(session, user, job_id)
    return {"id": job.id, "status": job.status, "result": job.result, "error": job.error}


@router.post("", status_code=status.HTTP_202_ACCEPTED, response_model=EvaluateOut,
             responses={200: {"model": EvaluateOut, "description": "The verdict arrived within `wait_s`"}},
             summary="Judge a candidate against a reference")
async def evaluate(body: EvaluateCreate, db: DbDep, user: CurrentUser, settings: SettingsDep,
                   response: Response) -> dict:
    job = await db.run(lambda s: create(s, user, body))  # committed and sent: a worker may take it now
    JOBS_SUBMITTED.labels(kind="evaluate", queue=job["queue"]).inc()
    deadline = time.monotonic() + min(body.wait_s, settings.api_max_wait_s)
    while time.monotonic() < deadline:  # waiting holds no thread: the poll is a short unit of work
        current = await db.read(lambda s: outcome(s, user, job["id"]))
        if current["status"] in svc.TERMINAL:
            response.status_code = status.HTTP_200_OK
            return current
        await asyncio.sleep(0.2)
    return {"id": job["id"], "status": job["status"], "result": None, "error": None}

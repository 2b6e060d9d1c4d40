"""/v1/evaluate: judge a given candidate against a reference (a job of kind
"evaluate", run by a worker like any other). Waiting for the verdict holds no
thread: the request sleeps on the event loop until the job's final status is
announced (app/jobs/reading/wait.py)."""

from __future__ import annotations

from fastapi import APIRouter, Response, status
from sqlalchemy.orm import Session

from ...jobs.create import JOBS_SUBMITTED, create_evaluation
from ...jobs.reading.views import visible_job
from ...jobs.reading.wait import wait_finished
from ...jobs.sending.broker import enqueue_after_commit
from ...jobs.status import TERMINAL
from ...schemas import EvaluateCreate, EvaluateOut
from ..deps import CurrentUser, DbDep, RateLimit, SettingsDep
from ..errors import responses

router = APIRouter(prefix="/v1/evaluate", tags=["evaluate"], dependencies=[RateLimit],
                   responses=responses(400, 401, 422, 429, 500, 503))


def create(session: Session, user, body: EvaluateCreate) -> dict:  # noqa: ANN001
    job = create_evaluation(session, user, body)
    enqueue_after_commit(session, job)
    return {"id": job.id, "status": job.status, "queue": job.queue}


def outcome(session: Session, user, job_id: str) -> dict:  # noqa: ANN001
    job = visible_job(session, user, job_id)
    return {"id": job.id, "status": job.status, "result": job.result, "error": job.error}


@router.post("", status_code=status.HTTP_202_ACCEPTED, response_model=EvaluateOut,
             responses={200: {"model": EvaluateOut, "description": "The verdict arrived within `wait_s`"}},
             summary="Judge a candidate against a reference")
async def evaluate(body: EvaluateCreate, db: DbDep, user: CurrentUser, settings: SettingsDep,
                   response: Response) -> dict:
    job = await db.run(lambda s: create(s, user, body))  # committed and sent: a worker may take it now
    JOBS_SUBMITTED.labels(kind="evaluate", queue=job["queue"]).inc()
    current = await wait_finished(settings, job["id"], min(body.wait_s, settings.api_max_wait_s),
                                  lambda: db.read(lambda s: outcome(s, user, job["id"])))
    if current is not None and current["status"] in TERMINAL:
        response.status_code = status.HTTP_200_OK
        return current
    return {"id": job["id"], "status": job["status"], "result": None, "error": None}

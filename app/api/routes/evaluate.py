"""/v1/evaluate: judge a given candidate against a reference (a job of kind
"evaluate", run by a worker like any other)."""

from __future__ import annotations

import time

from fastapi import APIRouter, Response, status

from ...db.session import session_factory
from ...schemas import EvaluateCreate, EvaluateOut
from ...services import jobs as svc
from ..deps import CurrentUser, RateLimit, SessionDep, SettingsDep
from ..errors import responses
from ..metrics import JOBS_SUBMITTED

router = APIRouter(prefix="/v1/evaluate", tags=["evaluate"], dependencies=[RateLimit],
                   responses=responses(400, 401, 422, 429, 500))


@router.post("", status_code=status.HTTP_202_ACCEPTED, response_model=EvaluateOut,
             responses={200: {"model": EvaluateOut, "description": "The verdict arrived within `wait_s`"}},
             summary="Judge a candidate against a reference")
def evaluate(body: EvaluateCreate, session: SessionDep, user: CurrentUser, settings: SettingsDep,
             response: Response) -> dict:
    job = svc.create_evaluation(session, user, body)
    session.info["enqueue"].append((job.id, job.queue))
    JOBS_SUBMITTED.labels(kind="evaluate", queue=job.queue).inc()
    session.commit()  # the worker must see the row before the wait below
    deadline = time.monotonic() + min(body.wait_s, settings.api_max_wait_s)
    while time.monotonic() < deadline:
        with session_factory(settings.db_url)() as fresh:
            current = svc.visible_job(fresh, user, job.id)
            if current.status in svc.TERMINAL:
                response.status_code = status.HTTP_200_OK
                return {"id": current.id, "status": current.status, "result": current.result, "error": current.error}
        time.sleep(0.2)
    return {"id": job.id, "status": job.status, "result": None, "error": None}

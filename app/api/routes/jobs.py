"""/v1/jobs: submit, list, read, cancel, download the best kernel."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response, status

from ...schemas import JobCreate, JobDetail, JobOut, JobPage, Text
from ...services import jobs as svc
from ..deps import CurrentUser, RateLimit, SessionDep
from ..errors import responses
from ..metrics import JOBS_SUBMITTED

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], dependencies=[RateLimit], responses=responses(401, 422, 429, 500))
Status = Literal["queued", "running", "succeeded", "failed", "cancelled"]


@router.post("", status_code=status.HTTP_201_CREATED, response_model=JobOut, responses=responses(400),
             summary="Submit an optimisation job (reference source or a bundled problem)")
def submit(body: JobCreate, session: SessionDep, user: CurrentUser) -> dict:
    job = svc.create_job(session, user, body)
    session.info["enqueue"].append((job.id, job.queue))
    JOBS_SUBMITTED.labels(kind="optimize", queue=job.queue).inc()
    return svc.job_out(job, 0)


@router.get("", response_model=JobPage, summary="List your jobs, newest first")
def list_(session: SessionDep, user: CurrentUser, status_: Annotated[Status | None, Query(alias="status")] = None,
          kind: Literal["optimize", "evaluate"] | None = None,
          owner: Annotated[Text | None, Query(max_length=100, description="Admins only: one user's jobs.")] = None,
          limit: Annotated[int, Query(ge=1, le=200)] = 50, offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0) -> dict:
    rows, total = svc.list_jobs(session, user, status_, kind, limit, offset, owner)
    counts = svc.candidate_counts(session, [j.id for j in rows])
    return {"items": [svc.job_out(j, counts.get(j.id, 0)) for j in rows], "total": total, "limit": limit,
            "offset": offset}


@router.get("/{job_id}", response_model=JobDetail, responses=responses(404), summary="A job with its rounds and candidates")
def get(job_id: str, session: SessionDep, user: CurrentUser) -> dict:
    return svc.job_detail(svc.visible_job(session, user, job_id, detail=True))


@router.post("/{job_id}/cancel", response_model=JobOut, responses=responses(404, 409), summary="Cancel a queued or running job")
def cancel(job_id: str, session: SessionDep, user: CurrentUser) -> dict:
    return svc.job_out(svc.cancel_job(session, user, job_id))


@router.get("/{job_id}/best", response_class=Response, summary="Download the best verified kernel",
            responses={200: {"content": {"text/x-python": {"schema": {"type": "string"}}}}, **responses(404)})
def best(job_id: str, session: SessionDep, user: CurrentUser) -> Response:
    code, cand = svc.best_code(session, user, job_id)
    return Response(code, media_type="text/x-python", headers={
        "Content-Disposition": f'attachment; filename="{job_id}-{cand.attempt_id}.py"'})

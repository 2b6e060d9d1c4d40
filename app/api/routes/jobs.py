"""/v1/jobs: submit, list, read, cancel, download the best kernel."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response, status

from ...jobs.create import JOBS_SUBMITTED, submit_job
from ...jobs.lease import cancel_job
from ...jobs.reading import core_views as views
from ...jobs.reading import views as svc
from ...jobs.status import JobStatus
from ...schemas import JobCreate, JobDetail, JobOut, JobPage, Text
from ..deps import CallerDep
from ..errors import responses

# Every route takes `CallerDep` (the rate limit, the token and the unit of work in one dependency).
router = APIRouter(prefix="/v1/jobs", tags=["jobs"], responses=responses(401, 422, 429, 500, 503))
Status = Literal[tuple(s.value for s in JobStatus)]  # type: ignore[valid-type]  # the one list, as a schema enum


@router.post("", status_code=status.HTTP_201_CREATED, response_model=JobOut, responses=responses(400),
             summary="Submit an optimisation job (reference source or a bundled problem)")
async def submit(body: JobCreate, caller: CallerDep) -> dict:
    out = await submit_job(caller.db, caller.user, body)
    JOBS_SUBMITTED.labels(kind="optimize", queue=out["queue"]).inc()
    return out


@router.get("", response_model=JobPage, summary="List your jobs, newest first")
async def list_(caller: CallerDep, status_: Annotated[Status | None, Query(alias="status")] = None,
                kind: Literal["optimize", "evaluate"] | None = None,
                owner: Annotated[Text | None, Query(max_length=100, description="Admins only: one user's jobs.")] = None,
                limit: Annotated[int, Query(ge=1, le=200)] = 50,
                offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0) -> dict:
    return await caller.db.read(lambda s: views.job_page(s, caller.user, status_, kind, limit, offset, owner))


@router.get("/{job_id}", response_model=JobDetail, responses=responses(404), summary="A job with its rounds and candidates")
async def get(job_id: str, caller: CallerDep) -> JobDetail:
    return await views.job_detail_model(caller.db.rows_many, caller.user, job_id)


@router.post("/{job_id}/cancel", response_model=JobOut, responses=responses(404, 409), summary="Cancel a queued or running job")
async def cancel(job_id: str, caller: CallerDep) -> dict:
    return await caller.db.run(lambda s: svc.job_summary(s, cancel_job(s, caller.user, job_id)))


@router.get("/{job_id}/best", response_class=Response, summary="Download the best verified kernel",
            responses={200: {"content": {"text/x-python": {"schema": {"type": "string"}}}}, **responses(404)})
async def best(job_id: str, caller: CallerDep) -> Response:
    code, cand = await caller.db.read(lambda s: svc.best_code(s, caller.user, job_id))
    return Response(code, media_type="text/x-python", headers={
        "Content-Disposition": f'attachment; filename="{job_id}-{cand.attempt_id}.py"'})

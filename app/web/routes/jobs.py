"""Jobs: the list (filters, search, keyset pages), a job's page (live while it
runs), its candidates, a diff against the parent, cancellation."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, RedirectResponse

from ...errors import NotFound
from ...jobs.lease import cancel_job
from ...jobs.reading import views as svc
from ...jobs.reading.listing import BACKENDS, Filters, list_page
from ...jobs.status import LIVE, JobStatus
from ..deps import FormData, WebSession, WebUser
from ..diff import side_by_side
from ..page_route import PageRoute
from ..render import page_context, render, render_fragment
from ..security import HEADERS, check_csrf
from ..views import candidate, candidate_count, check_rows, job_view, live_version

router = APIRouter(route_class=PageRoute, include_in_schema=False)


@router.get("/")
def home() -> Response:
    return RedirectResponse("/jobs", status_code=303)


@router.get("/jobs")
def jobs_list(request: Request, session: WebSession, user: WebUser) -> Response:
    params = request.query_params
    filters = Filters.parse(params, user.is_admin)
    page = list_page(session, user, filters, before=params.get("before"), after=params.get("after"))
    return render(request, "jobs.html", {"filters": filters, "page": page, "backends": BACKENDS,
                                         "statuses": tuple(JobStatus)},
                  user=user, active="jobs")


@router.get("/jobs/{job_id}")
def job_page(job_id: str, request: Request, session: WebSession, user: WebUser) -> Response:
    view = job_view(svc.visible_job(session, user, job_id, detail=True))
    return render(request, "job.html", view, user=user, active="jobs")


@router.get("/jobs/{job_id}/live")
def job_live(job_id: str, request: Request, session: WebSession, user: WebUser, v: str = "") -> Response:
    """Polled every 2 s by the page while the job is queued or running: the body
    is re-rendered only when something changed since version `v`."""
    job = svc.visible_job(session, user, job_id)
    version = live_version(job, candidate_count(session, job.id))
    body = {"status": job.status, "version": version, "live": job.status in LIVE}
    if version != v:
        job = svc.visible_job(session, user, job_id, detail=True)
        view = job_view(job)
        body["html"] = render_fragment("_job_body.html", {**page_context(request, user), **view})
    return JSONResponse(body, headers=HEADERS)


@router.post("/jobs/{job_id}/cancel")
def job_cancel(job_id: str, request: Request, session: WebSession, user: WebUser, form: FormData) -> Response:
    check_csrf(request, form)
    cancel_job(session, user, job_id)
    return RedirectResponse(f"/jobs/{job_id}", status_code=303)


@router.get("/jobs/{job_id}/candidates/{attempt_id}")
def candidate_page(job_id: str, attempt_id: str, request: Request, session: WebSession, user: WebUser) -> Response:
    job = svc.visible_job(session, user, job_id)
    cand = candidate(session, job.id, attempt_id)
    if cand is None:
        raise NotFound(f"job {job_id} has no candidate {attempt_id}")
    rows, loose = check_rows({"reasons": cand.reasons, "checks": cand.checks})
    return render(request, "candidate.html", {"job": job, "cand": cand, "check_rows": rows, "loose_reasons": loose},
                  user=user, active="jobs")


@router.get("/jobs/{job_id}/candidates/{attempt_id}/diff")
def candidate_diff(job_id: str, attempt_id: str, request: Request, session: WebSession, user: WebUser,
                   against: str | None = None) -> Response:
    """Side by side against `against` (an attempt id, or "reference"); by
    default the candidate's parent, else the one it repairs, else the reference."""
    job = svc.visible_job(session, user, job_id)
    cand = candidate(session, job.id, attempt_id)
    if cand is None:
        raise NotFound(f"job {job_id} has no candidate {attempt_id}")
    base_id = against or cand.parent_id or cand.repair_of or "reference"
    if base_id == "reference":
        base_code, base_label = job.reference, "the reference"
    else:
        base = candidate(session, job.id, base_id)
        if base is None:
            raise NotFound(f"job {job_id} has no candidate {base_id}")
        base_code, base_label = base.code, base_id
    rows, stats = side_by_side(base_code, cand.code)
    return render(request, "diff.html", {"job": job, "cand": cand, "base_id": base_id, "base_label": base_label,
                                         "rows": rows, "stats": stats}, user=user, active="jobs")

"""Read-only views of jobs for the API's hot paths, built from Core rows:
loading ORM objects (identity map, instance state, relationship loaders) cost
more CPU than the queries themselves (docs/benchmarks/history/2026-11-24.md). Writes and the
dashboard keep the ORM (views.py)."""

from __future__ import annotations

from typing import Any, Protocol

from sqlalchemy import Executable, Select, bindparam, func, select
from sqlalchemy.orm import Session

from ...db.models import Candidate, Job, User
from ...errors import NotFound
from ...schemas import CandidateOut, JobDetail, JobOut
from .views import candidate_counts, detail_model, is_job_id

SUMMARY = [c for c in Job.__table__.c if c.key in JobOut.model_fields]
CANDIDATE = [c for c in Candidate.__table__.c if c.key in CandidateOut.model_fields]


def summaries() -> Select:
    return select(*SUMMARY, User.name.label("owner")).join(User, Job.owner_id == User.id)


def job_page(session: Session, user: User, status: str | None, kind: str | None, limit: int, offset: int,
             owner: str | None = None) -> dict[str, Any]:
    conds = []
    if not user.is_admin:
        conds.append(Job.owner_id == user.id)
    elif owner:
        conds.append(Job.owner_id == select(User.id).where(User.name == owner).scalar_subquery())
    if status:
        conds.append(Job.status == status)
    if kind:
        conds.append(Job.kind == kind)
    conn = session.connection()
    total = conn.execute(select(func.count()).select_from(Job).where(*conds)).scalar() or 0
    rows = conn.execute(summaries().where(*conds).order_by(Job.created_at.desc(), Job.id)
                           .limit(limit).offset(offset)).mappings().all()
    counts = candidate_counts(session, [r["id"] for r in rows])
    items = [{**r, "candidates_count": counts.get(r["id"], 0)} for r in rows]
    return {"items": items, "total": total, "limit": limit, "offset": offset}


# Built once; executed on the session's Core connection, past the ORM's statement handling.
DETAIL = summaries().add_columns(Job.owner_id, Job.config, Job.result, Job.trajectory) \
    .where(Job.id == bindparam("job_id"))
CANDIDATES = select(*CANDIDATE).where(Candidate.job_id == bindparam("job_id")).order_by(Candidate.id)


class Rows(Protocol):
    """Runs prebuilt selects on one connection: `Db.rows_many` (app/api/unit.py)."""

    async def __call__(self, queries: list[tuple[Executable, dict[str, Any]]], /) -> list[list[dict[str, Any]]]: ...


async def job_detail(rows: Rows, user: User, job_id: str) -> dict[str, Any]:
    """The job with its candidates, if the user may see it (another owner's job is missing, not forbidden)."""
    return (await job_detail_model(rows, user, job_id)).model_dump()


async def job_detail_model(rows: Rows, user: User, job_id: str) -> JobDetail:
    """`job_detail`, validated and not yet dumped (the API serialises it straight to JSON). The job and its
    candidates are read in one go, on one pooled connection; a job the user may not see is missing."""
    return (await owned_job_detail(rows, user, job_id))[1]


async def owned_job_detail(rows: Rows, user: User, job_id: str) -> tuple[int, JobDetail]:
    """(the owner's user id, `job_detail_model`): what the read cache keeps."""
    if not is_job_id(job_id):
        raise NotFound(f"no job {job_id}")
    found, candidates = await rows([(DETAIL, {"job_id": job_id}), (CANDIDATES, {"job_id": job_id})])
    if not found or (found[0]["owner_id"] != user.id and not user.is_admin):
        raise NotFound(f"no job {job_id}")
    row = found[0]
    summary = {k: row[k] for k in JobOut.model_fields if k != "candidates_count"}
    summary["candidates_count"] = len(candidates)
    return row["owner_id"], detail_model(summary, row["config"], row["result"], row["trajectory"], candidates)

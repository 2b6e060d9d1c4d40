"""Reading jobs through the ORM: a job as its owner (or an admin) may see it,
its best kernel, its summary and detail (the dashboard and the embedded MCP
server use these; the API's hot paths read Core rows, core_views.py)."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, joinedload, selectinload

from agents.search import compare_record

from ...db.models import Candidate, Job, User
from ...errors import NotFound
from ...schemas import CandidateOut, JobDetail, JobOut
from ..status import TERMINAL


def is_job_id(text: str) -> bool:
    try:
        return str(uuid.UUID(text)) == text
    except ValueError:
        return False


def visible_job(session: Session, user: User, job_id: str, detail: bool = False) -> Job:
    if not is_job_id(job_id):  # not even the shape of an id: no need to ask the database
        raise NotFound(f"no job {job_id}")
    opts = [joinedload(Job.owner)] + ([selectinload(Job.candidates)] if detail else [])
    job = session.get(Job, job_id, options=opts)
    # Another owner's job is reported as missing, not forbidden: ids leak nothing.
    if job is None or (job.owner_id != user.id and not user.is_admin):
        raise NotFound(f"no job {job_id}")
    return job


def candidate_counts(session: Session, job_ids: list[str]) -> dict[str, int]:
    if not job_ids:
        return {}
    rows = session.execute(select(Candidate.job_id, func.count()).where(Candidate.job_id.in_(job_ids))
                           .group_by(Candidate.job_id))
    return {job_id: n for job_id, n in rows}


def best_code(session: Session, user: User, job_id: str) -> tuple[str, Candidate]:
    job = visible_job(session, user, job_id)
    if job.best_attempt_id is None:
        raise NotFound(f"job {job_id} has no verified kernel" + ("" if job.status in TERMINAL else " yet"))
    cand = session.scalar(select(Candidate).where(Candidate.job_id == job.id,
                                                   Candidate.attempt_id == job.best_attempt_id))
    if cand is None:
        raise NotFound(f"job {job_id} has no verified kernel")
    return cand.code, cand


def job_out(job: Job, count: int | None = None, owner: str | None = None) -> dict[str, Any]:
    """A job's summary; pass what the caller knows (count, owner) to spare the queries."""
    data = {f: getattr(job, f) for f in JobOut.model_fields if f not in ("owner", "candidates_count")}
    data["owner"] = owner or job.owner.name
    data["candidates_count"] = count if count is not None else len(job.candidates)
    return data


def job_summary(session: Session, job: Job) -> dict[str, Any]:
    return job_out(job, candidate_counts(session, [job.id]).get(job.id, 0))


def job_detail(job: Job) -> dict[str, Any]:
    return compose_detail(job_out(job), job.config, job.result, job.trajectory,
                          [CandidateOut.model_validate(c).model_dump() for c in job.candidates])


def compose_detail(summary: dict[str, Any], config: dict[str, Any], result: dict[str, Any] | None,
                   trajectory: dict[str, Any] | None, candidates: list[dict[str, Any]]) -> dict[str, Any]:
    """A job's detail: its summary, the candidates grouped by round with each round's plan."""
    return detail_model(summary, config, result, trajectory, candidates).model_dump()


def detail_model(summary: dict[str, Any], config: dict[str, Any], result: dict[str, Any] | None,
                 trajectory: dict[str, Any] | None, candidates: list[dict[str, Any]]) -> JobDetail:
    """`compose_detail`, validated once and not yet dumped (the API serialises it straight to JSON)."""
    rounds: dict[int, list[dict[str, Any]]] = {}
    for cand in candidates:
        rounds.setdefault(cand["round"], []).append(cand)
    traj = trajectory or {}
    plans = {r["index"]: r.get("plan", []) for r in traj.get("rounds", [])}
    best = next((c for c in candidates if c["attempt_id"] == summary.get("best_attempt_id")), None)
    comparison = compare_record(best).to_json() if summary.get("kind", "optimize") != "evaluate" else None
    data = {**summary, "comparison": comparison, "config": config, "result": result, "usage": traj.get("usage"),
            "strategies_used": traj.get("strategies_used", []), "regions": regions(best, plans.get(0, [])),
            "rounds": [{"index": i, "plan": [p.get("title", "") for p in plans.get(i, [])], "candidates": c}
                       for i, c in sorted(rounds.items())]}
    return JobDetail.model_validate(data)


def regions(best: dict[str, Any] | None, plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The best kernel's regions when it is the offline engine's pipeline (a whole model cut
    into one kernel per region): the stages its plan entry names, ``a | b | c`` before the
    parameters."""
    if not best or not str(best.get("strategy") or "").startswith("offline: pipeline"):
        return []
    entry = next((p for p in plan if p.get("title") == best["strategy"]), None)
    stages = str((entry or {}).get("rationale") or "").split("; ")[0]
    return [{"index": i, "kernel": k.strip()} for i, k in enumerate(stages.split(" | "), 1) if k.strip()] \
        if " | " in stages else []


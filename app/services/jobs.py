"""Jobs: creation, listing with owner separation, cancellation, detail views."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, joinedload, selectinload

from ..backends import device_for
from ..db.base import utcnow
from ..db.models import Candidate, Job, User
from ..errors import BadRequest, Conflict, NotFound
from ..schemas import CandidateOut, EvaluateCreate, JobCreate, JobDetail, JobOut

PROBLEMS_DIR = Path(__file__).resolve().parents[2] / "problems"
TERMINAL = ("succeeded", "failed", "cancelled")


def queue_for(gpu_kind: str | None) -> str:
    return f"gpu-{gpu_kind}" if gpu_kind else "cpu"


def bundled_problem(name: str) -> tuple[str, str]:
    path = (PROBLEMS_DIR / f"{name.removesuffix('.py')}.py").resolve()
    if PROBLEMS_DIR not in path.parents or not path.is_file():
        raise BadRequest(f"no bundled problem named {name!r}")
    return path.stem, path.read_text(encoding="utf-8")


def check_reference(source: str, name: str) -> None:
    from sandbox import ProblemError
    from sandbox.problem import parse_source

    try:
        parse_source(source, name)
    except ProblemError as exc:
        raise BadRequest(str(exc)) from exc


def create_job(session: Session, owner: User, spec: JobCreate) -> Job:
    if spec.problem:
        name, reference = bundled_problem(spec.problem)
    else:
        name, reference = spec.name or "reference", spec.reference or ""
    check_reference(reference, f"{name}.py")
    config = spec.model_dump(include={"max_rounds", "candidates_per_round", "max_repairs", "max_cost_usd",
                                      "max_tokens", "max_wall_s", "target_speedup", "device"})
    config["device"] = device_for(spec.backend, spec.device)
    job = Job(owner_id=owner.id, kind="optimize", problem_name=spec.name or name, reference=reference,
              backend=spec.backend, gpu_kind=spec.gpu_kind, queue=queue_for(spec.gpu_kind), provider=spec.provider,
              model=spec.model, base_url=spec.base_url, config=config)
    session.add(job)
    session.flush()
    return job


def create_evaluation(session: Session, owner: User, spec: EvaluateCreate) -> Job:
    check_reference(spec.reference, "reference.py")
    job = Job(owner_id=owner.id, kind="evaluate", problem_name="evaluate", reference=spec.reference,
              candidate=spec.candidate, gpu_kind=spec.gpu_kind, queue=queue_for(spec.gpu_kind),
              config={"device": spec.device})
    session.add(job)
    session.flush()
    return job


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


def cancel_job(session: Session, user: User, job_id: str) -> Job:
    job = visible_job(session, user, job_id)
    if job.status in TERMINAL:
        raise Conflict(f"job {job_id} is already {job.status}")
    job.cancel_requested = True
    if job.status == "queued":
        job.status, job.finished_at = "cancelled", utcnow()
    session.flush()
    return job


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
    rounds: dict[int, list[dict[str, Any]]] = {}
    for cand in candidates:
        rounds.setdefault(cand["round"], []).append(cand)
    traj = trajectory or {}
    plans = {r["index"]: r.get("plan", []) for r in traj.get("rounds", [])}
    data = {**summary, "config": config, "result": result, "usage": traj.get("usage"),
            "strategies_used": traj.get("strategies_used", []),
            "rounds": [{"index": i, "plan": [p.get("title", "") for p in plans.get(i, [])], "candidates": c}
                       for i, c in sorted(rounds.items())]}
    return JobDetail.model_validate(data).model_dump()

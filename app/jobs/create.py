"""Making a job: a bundled problem or a pasted reference is checked (parsed,
never run) and stored as a queued row on its queue. The caller's unit of work
commits and then sends it (`enqueue_after_commit`, broker.py). The API's
submissions on PostgreSQL (`submit_job`) write the row with one idempotent
INSERT from the event loop instead (no thread, no session, no BEGIN and
COMMIT: docs/benchmarks/history/2026-11-27.md, issue 31) and send it once that INSERT has
committed; the columns are the same (`job_row`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from prometheus_client import Counter
from sqlalchemy import Executable, bindparam
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from ..backends import device_for
from ..db.models import Job, User
from ..errors import BadRequest
from ..schemas import EvaluateCreate, JobCreate, JobOut
from .reading.views import job_out
from .sending.broker import enqueue_after_commit
from .specs import SEARCH_FIELDS

PROBLEMS_DIR = Path(__file__).resolve().parents[2] / "problems"
# Prometheus: jobs submitted, counted by the routes that submit them (REST and the dashboard)
JOBS_SUBMITTED = Counter("kforge_jobs_submitted_total", "Jobs submitted", ["kind", "queue"])


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


def job_row(owner: User, spec: JobCreate) -> dict[str, Any]:
    """The columns of a new optimisation job (kind "optimize") that get a value,
    the columns' defaults filled in as the ORM would; raises BadRequest for an
    unusable reference."""
    if spec.problem:
        name, reference = bundled_problem(spec.problem)
    else:
        name, reference = spec.name or "reference", spec.reference or ""
    check_reference(reference, f"{name}.py")
    config = spec.model_dump(include={*SEARCH_FIELDS, "device"})
    config["device"] = device_for(spec.backend, spec.device)
    return {**_defaults(), "owner_id": owner.id, "kind": "optimize", "problem_name": spec.name or name,
            "reference": reference, "backend": spec.backend, "gpu_kind": spec.gpu_kind,
            "queue": queue_for(spec.gpu_kind), "provider": spec.provider, "model": spec.model,
            "base_url": spec.base_url, "config": config}


def _defaults() -> dict[str, Any]:
    return {c.key: c.default.arg(None) if c.default.is_callable else c.default.arg  # type: ignore[union-attr]
            for c in Job.__table__.c if c.default is not None}


def create_job(session: Session, owner: User, spec: JobCreate) -> Job:
    """An optimisation job (kind "optimize")."""
    job = Job(**job_row(owner, spec))
    session.add(job)
    session.flush()
    return job


# Every column, each value a parameter named v_<column> (a bind may not share its column's name); a job id
# already there is left alone, so a retried INSERT (app/db/loop_reads.py) cannot make a second job.
_COLUMNS = [c.key for c in Job.__table__.c]
NEW_JOB = pg_insert(Job.__table__).values({k: bindparam(f"v_{k}") for k in _COLUMNS}) \
    .on_conflict_do_nothing(index_elements=["id"])


class Unit(Protocol):
    """What `submit_job` needs of the API's unit of work (`Db`, app/api/unit.py)."""

    @property
    def on_loop(self) -> bool: ...

    async def run(self, fn: Any) -> Any: ...

    async def write(self, statement: Executable, params: dict[str, Any], queued: list[tuple[str, str]]) -> None: ...


async def submit_job(unit: Unit, owner: User, spec: JobCreate) -> dict[str, Any]:
    """Makes an optimisation job, sends it after its commit, and returns its summary (JobOut)."""
    if not unit.on_loop:
        def create(session: Session) -> dict[str, Any]:
            job = create_job(session, owner, spec)
            enqueue_after_commit(session, job)
            return job_out(job, 0, owner=owner.name)

        return await unit.run(create)
    row = job_row(owner, spec)
    await unit.write(NEW_JOB, {f"v_{k}": row.get(k) for k in _COLUMNS}, [(row["id"], row["queue"])])
    return {**{k: row.get(k) for k in JobOut.model_fields}, "owner": owner.name, "candidates_count": 0}


def create_evaluation(session: Session, owner: User, spec: EvaluateCreate) -> Job:
    """A job of kind "evaluate": judge one candidate, run by a worker like any other."""
    check_reference(spec.reference, "reference.py")
    job = Job(owner_id=owner.id, kind="evaluate", problem_name="evaluate", reference=spec.reference,
              candidate=spec.candidate, gpu_kind=spec.gpu_kind, queue=queue_for(spec.gpu_kind),
              config={"device": spec.device})
    session.add(job)
    session.flush()
    return job

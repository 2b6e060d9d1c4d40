"""Making a job: a bundled problem or a pasted reference is checked (parsed,
never run) and stored as a queued row on its queue. The caller's unit of work
commits and then sends it (`enqueue_after_commit`, broker.py)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.orm import Session

from ..backends import device_for
from ..db.models import Job, User
from ..errors import BadRequest
from ..schemas import EvaluateCreate, JobCreate
from .specs import SEARCH_FIELDS

PROBLEMS_DIR = Path(__file__).resolve().parents[2] / "problems"


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
    """An optimisation job (kind "optimize")."""
    if spec.problem:
        name, reference = bundled_problem(spec.problem)
    else:
        name, reference = spec.name or "reference", spec.reference or ""
    check_reference(reference, f"{name}.py")
    config = spec.model_dump(include={*SEARCH_FIELDS, "device"})
    config["device"] = device_for(spec.backend, spec.device)
    job = Job(owner_id=owner.id, kind="optimize", problem_name=spec.name or name, reference=reference,
              backend=spec.backend, gpu_kind=spec.gpu_kind, queue=queue_for(spec.gpu_kind), provider=spec.provider,
              model=spec.model, base_url=spec.base_url, config=config)
    session.add(job)
    session.flush()
    return job


def create_evaluation(session: Session, owner: User, spec: EvaluateCreate) -> Job:
    """A job of kind "evaluate": judge one candidate, run by a worker like any other."""
    check_reference(spec.reference, "reference.py")
    job = Job(owner_id=owner.id, kind="evaluate", problem_name="evaluate", reference=spec.reference,
              candidate=spec.candidate, gpu_kind=spec.gpu_kind, queue=queue_for(spec.gpu_kind),
              config={"device": spec.device})
    session.add(job)
    session.flush()
    return job

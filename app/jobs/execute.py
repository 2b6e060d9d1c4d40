"""Running one job on a worker: a plain function the Celery task calls, the
embedded MCP server calls in a thread, and tests call directly.

The job's row is handled by app/jobs (claim with a lease, heartbeat, saves
after every attempt, finish); this module runs what the job's spec asks for:
an evaluation, or a search with the knowledge base, on this process's warm
judge behind the device lock.

Only the job's own failures mark it failed. A database or broker outage
(app/outages.py) is waited out, keeping the lease (the heartbeat goes on
trying): the claim, the reads and the final write are tried again
(``outlast``, app/outages.py), and a run that met the outage resumes from its last save once
the dependency is back. An outage longer than KFORGE_OUTAGE_WAIT_S leaves the
job as it is, to be resumed later, not failed.
"""

from __future__ import annotations

import logging
import time
import uuid
from functools import partial
from typing import Any

from agents.search import SearchConfig, Trajectory
from sandbox import Judge

from ..backends import GpuProbe
from ..outages import dependency_down, outlast, pause
from ..settings import Settings, get_settings
from .lease import Heartbeat, JobStopped, claim, finish, load_spec, persist, record_backend
from .specs import EvaluateSpec, JobSpec, OptimizeSpec
from .status import JobStatus

log = logging.getLogger("kforge.worker")
_JUDGE: Judge | None = None
# Resumptions after outages within one execution: a database error that keeps coming back is not an outage.
MAX_RESUMES = 20


def judge() -> Judge:
    """One warm judge per worker process, reused across jobs."""
    global _JUDGE
    if _JUDGE is None:
        _JUDGE = Judge(warm=True)
    return _JUDGE


def execute_job(job_id: str, settings: Settings | None = None, probe: GpuProbe | None = None) -> str:
    """Run (or resume) one job to its end; returns its final status, or
    "skipped" when another worker holds it. ``probe`` names the GPU this worker
    sees (default: torch's answer), which decides what ``backend: auto`` runs."""
    settings = settings or get_settings()
    url, lease, wait_s = settings.db_url, uuid.uuid4().hex, settings.outage_wait_s
    if not outlast(lambda: claim(url, job_id, lease, settings.stale_after_s), wait_s, f"claiming job {job_id}"):
        return "skipped"
    beat = Heartbeat(url, job_id, lease, settings.heartbeat_s)
    beat.start()
    try:
        return _to_the_end(job_id, lease, settings, beat, probe)
    finally:
        beat.stop_event.set()


def _to_the_end(job_id: str, lease: str, settings: Settings, beat: Heartbeat, probe: GpuProbe | None) -> str:
    url, wait_s = settings.db_url, settings.outage_wait_s
    for resumes in range(MAX_RESUMES + 1):
        try:
            spec = outlast(lambda: load_spec(url, job_id), wait_s, f"job {job_id}")
            if isinstance(spec, OptimizeSpec) and spec.backend_choice is None:
                spec = _choose(spec, job_id, lease, settings, probe)
            status, result = _run(spec, job_id, lease, settings, beat)
            _finish(settings, job_id, lease, status, result=result)
            return status
        except JobStopped as exc:
            status = JobStatus.CANCELLED if str(exc) == "cancelled" else JobStatus.QUEUED
            _finish(settings, job_id, lease, status)
            return status if status == JobStatus.CANCELLED else "lease lost"
        except Exception as exc:
            down = dependency_down(exc)
            if down is None:
                log.exception("job %s failed", job_id)
                _finish(settings, job_id, lease, JobStatus.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000])
                return JobStatus.FAILED
            if resumes == MAX_RESUMES:
                raise
            log.warning("job %s met an outage of the %s (%s); resuming from its last save", job_id, down,
                        type(exc).__name__)
            time.sleep(pause(resumes))
    raise AssertionError("unreachable")


def _finish(settings: Settings, job_id: str, lease: str, status: str, **extra: Any) -> None:
    outlast(partial(finish, settings.db_url, job_id, lease, status, **extra), settings.outage_wait_s, f"job {job_id}")


def _choose(spec: OptimizeSpec, job_id: str, lease: str, settings: Settings, probe: GpuProbe | None) -> JobSpec:
    """``auto`` becomes a backend here, where the device is known (the API host may have no GPU)."""
    from ..compose import choose_backend

    choice = choose_backend(settings, spec.backend, spec.device, probe=probe)
    log.info("job %s: backend %s on %s (%s)", job_id, choice.backend, choice.device_name, choice.reason)
    return record_backend(settings.db_url, job_id, lease, choice.to_dict())


def _run(spec: JobSpec, job_id: str, lease: str, settings: Settings,
         beat: Heartbeat) -> tuple[str, dict[str, Any]]:
    from ..compose import eval_options, guarded

    options = eval_options(settings, spec.backend, device=spec.device)
    evaluator = guarded(judge(), options.device, settings)
    if isinstance(spec, EvaluateSpec):
        result = evaluator.evaluate(spec.reference, spec.candidate, "reference.py", "candidate.py", options)
        return JobStatus.SUCCEEDED, result.to_json()
    return JobStatus.SUCCEEDED, _search(spec, evaluator, options, job_id, lease, settings, beat)


def _search(spec: OptimizeSpec, evaluator: Any, options: Any, job_id: str, lease: str, settings: Settings,
            beat: Heartbeat) -> dict[str, Any]:
    from ..compose import make_search
    from ..kb import knowledge_base
    from ..kb.job_lessons import learn

    def on_event(event: dict[str, Any]) -> None:
        if beat.lost:
            raise JobStopped("lease lost")
        if event["kind"] == "saved":
            persist(settings.db_url, job_id, lease, event["trajectory"])

    search_config = SearchConfig(**{k: v for k, v in spec.config.items() if k in SearchConfig.__dataclass_fields__},
                                 backend=spec.backend)
    kb = knowledge_base(settings.db_url)
    search = make_search(evaluator, options, spec.provider, spec.model, spec.base_url, search_config,
                         on_event=on_event, kb=kb)
    resume = Trajectory.from_dict(spec.trajectory) if spec.trajectory else None
    traj = search.run(spec.reference, f"{spec.problem_name}.py", resume=resume)
    lessons = learn(kb, traj, search.analysis, spec.backend, job_id, search.provider)
    persist(settings.db_url, job_id, lease, traj)
    summary = traj.summary()
    return {**{k: summary[k] for k in ("best", "comparison", "label", "usage", "stop_reason", "elapsed_s", "offline", "tuning")},
            "learned": lessons, "backend_choice": spec.backend_choice}

"""Running one job on a worker: a plain function the Celery task calls, the
embedded MCP server calls in a thread, and tests call directly.

The job's row is handled by app/jobs (claim with a lease, heartbeat, saves
after every attempt, finish); this module runs what the job's spec asks for:
an evaluation, or a search with the knowledge base, on this process's warm
judge behind the device lock.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from agents.search import SearchConfig, Trajectory
from sandbox import Judge

from ..backends import GpuProbe
from ..jobs.lease import Heartbeat, JobStopped, claim, finish, load_spec, persist, record_backend
from ..jobs.specs import EvaluateSpec, JobSpec, OptimizeSpec
from ..jobs.status import JobStatus
from ..settings import Settings, get_settings

log = logging.getLogger("kforge.worker")
_JUDGE: Judge | None = None


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
    url, lease = settings.db_url, uuid.uuid4().hex
    if not claim(url, job_id, lease, settings.stale_after_s):
        return "skipped"
    beat = Heartbeat(url, job_id, lease, settings.heartbeat_s)
    beat.start()
    try:
        spec = load_spec(url, job_id)
        if isinstance(spec, OptimizeSpec) and spec.backend_choice is None:
            spec = _choose(spec, job_id, lease, settings, probe)
        status, result = _run(spec, job_id, lease, settings, beat)
        finish(url, job_id, lease, status, result=result)
        return status
    except JobStopped as exc:
        finish(url, job_id, lease, JobStatus.CANCELLED if str(exc) == "cancelled" else JobStatus.QUEUED)
        return JobStatus.CANCELLED
    except Exception as exc:
        log.exception("job %s failed", job_id)
        finish(url, job_id, lease, JobStatus.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000])
        return JobStatus.FAILED
    finally:
        beat.stop_event.set()


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
    return {**{k: summary[k] for k in ("best", "label", "usage", "stop_reason", "elapsed_s", "offline")},
            "learned": lessons, "backend_choice": spec.backend_choice}

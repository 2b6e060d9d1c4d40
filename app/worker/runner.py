"""Running one job on a worker: a plain function the Celery task calls and
tests call directly.

A job is claimed with a lease (an atomic UPDATE), kept alive by a heartbeat,
and its trajectory and candidates are written to the database after every
attempt. A job whose worker died (stale heartbeat) can be claimed again and
resumes from its saved trajectory; candidates are upserted by (job, attempt
id), so none is lost or duplicated. Cancellation is checked at every save.
"""

from __future__ import annotations

import logging
import threading
import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import or_, select, update

from agents.search import SearchConfig, Trajectory
from sandbox import Judge

from ..db.base import utcnow
from ..db.models import Candidate, Job
from ..db.session import transaction
from ..settings import Settings, get_settings

log = logging.getLogger("kforge.worker")
_JUDGE: Judge | None = None


class JobStopped(Exception):
    """Cancellation was requested, or another worker took the lease."""


def judge() -> Judge:
    """One warm judge per worker process, reused across jobs."""
    global _JUDGE
    if _JUDGE is None:
        _JUDGE = Judge(warm=True)
    return _JUDGE


def claim(url: str, job_id: str, lease: str, stale_s: float) -> bool:
    now = utcnow()
    with transaction(url) as s:
        result = s.execute(
            update(Job).where(Job.id == job_id, Job.cancel_requested.is_(False), or_(
                Job.status == "queued",
                (Job.status == "running") & (Job.heartbeat_at < now - timedelta(seconds=stale_s))))
            .values(status="running", lease=lease, heartbeat_at=now, runs=Job.runs + 1)
            .execution_options(synchronize_session=False))
        if result.rowcount == 1:
            s.execute(update(Job).where(Job.id == job_id, Job.started_at.is_(None)).values(started_at=now))
        return result.rowcount == 1


class Heartbeat(threading.Thread):
    def __init__(self, url: str, job_id: str, lease: str, every_s: float) -> None:
        super().__init__(daemon=True, name=f"heartbeat-{job_id[:8]}")
        self.url, self.job_id, self.lease, self.every_s = url, job_id, lease, every_s
        self.stop_event = threading.Event()
        self.lost = False

    def run(self) -> None:
        while not self.stop_event.wait(self.every_s):
            try:
                with transaction(self.url) as s:
                    n = s.execute(update(Job).where(Job.id == self.job_id, Job.lease == self.lease)
                                  .values(heartbeat_at=utcnow())).rowcount
                self.lost = n == 0
            except Exception:  # the database is briefly away; the next beat retries
                log.warning("heartbeat for %s failed", self.job_id, exc_info=True)


def persist(url: str, job_id: str, lease: str, traj: Trajectory) -> None:
    """Trajectory and judged candidates, in one transaction; raises JobStopped
    when the job was cancelled or its lease moved to another worker."""
    summary = traj.summary()
    with transaction(url) as s:
        job = s.get(Job, job_id, with_for_update=not url.startswith("sqlite"))
        if job is None or job.lease != lease:
            raise JobStopped("lease lost")
        job.trajectory = traj.to_dict()
        known = set(s.scalars(select(Candidate.attempt_id).where(Candidate.job_id == job_id)))
        for a in traj.attempts():
            if a.verdict == "pending" or a.id in known:
                continue
            s.add(Candidate(job_id=job_id, attempt_id=a.id, round=a.round, strategy=a.strategy, source=a.source,
                            parent_id=a.parent_id, repair_of=a.repair_of, verdict=a.verdict, reasons=a.reasons,
                            checks=a.checks, check_details=a.check_details, speedup=a.speedup, timing=a.timing, code=a.code,
                            input_tokens=a.input_tokens, output_tokens=a.output_tokens, cost_usd=a.cost_usd,
                            elapsed_s=a.elapsed_s))
        best = summary["best"]
        job.best_attempt_id = best["id"] if best else None
        job.best_speedup = best["speedup"] if best else None
        job.heartbeat_at = utcnow()
        if job.cancel_requested:
            raise JobStopped("cancelled")


def finish(url: str, job_id: str, lease: str, status: str, error: str | None = None,
           result: dict[str, Any] | None = None) -> None:
    with transaction(url) as s:
        job = s.get(Job, job_id)
        if job is None or job.lease != lease:
            return
        job.status, job.error, job.finished_at, job.lease = status, error, utcnow(), None
        if result is not None:
            job.result = result


def execute_job(job_id: str, settings: Settings | None = None) -> str:
    """Run (or resume) one job to its end; returns its final status, or
    "skipped" when another worker holds it."""
    settings = settings or get_settings()
    url, lease = settings.db_url, uuid.uuid4().hex
    if not claim(url, job_id, lease, settings.stale_after_s):
        return "skipped"
    beat = Heartbeat(url, job_id, lease, settings.heartbeat_s)
    beat.start()
    try:
        with transaction(url) as s:
            job = s.get(Job, job_id)
            spec = {c: getattr(job, c) for c in ("kind", "problem_name", "reference", "candidate", "backend",
                                                 "provider", "model", "base_url", "config", "trajectory")}
        status, result = _run(spec, job_id, lease, settings, beat)
        finish(url, job_id, lease, status, result=result)
        return status
    except JobStopped as exc:
        finish(url, job_id, lease, "cancelled" if str(exc) == "cancelled" else "queued")
        return "cancelled"
    except Exception as exc:
        log.exception("job %s failed", job_id)
        finish(url, job_id, lease, "failed", error=f"{type(exc).__name__}: {exc}"[:2000])
        return "failed"
    finally:
        beat.stop_event.set()


def _run(spec: dict[str, Any], job_id: str, lease: str, settings: Settings,
         beat: Heartbeat) -> tuple[str, dict[str, Any]]:
    from ..compose import eval_options, guarded, make_search

    config = spec["config"] or {}
    options = eval_options(settings, spec["backend"] or "triton", device=config.get("device"))
    evaluator = guarded(judge(), options.device, settings)
    if spec["kind"] == "evaluate":
        result = evaluator.evaluate(spec["reference"], spec["candidate"], "reference.py", "candidate.py", options)
        return "succeeded", result.to_json()

    def on_event(event: dict[str, Any]) -> None:
        if beat.lost:
            raise JobStopped("lease lost")
        if event["kind"] == "saved":
            persist(settings.db_url, job_id, lease, event["trajectory"])

    search_config = SearchConfig(**{k: v for k, v in config.items() if k in SearchConfig.__dataclass_fields__},
                                 backend=spec["backend"])
    from ..kb import knowledge_base
    from ..kb.learning import learn

    kb = knowledge_base(settings.db_url)
    search = make_search(evaluator, options, spec["provider"], spec["model"], spec["base_url"], search_config,
                         on_event=on_event, kb=kb)
    resume = Trajectory.from_dict(spec["trajectory"]) if spec["trajectory"] else None
    traj = search.run(spec["reference"], f"{spec['problem_name']}.py", resume=resume)
    lessons = learn(kb, traj, search.analysis, spec["backend"], job_id, search.provider)
    persist(settings.db_url, job_id, lease, traj)
    summary = traj.summary()
    return "succeeded", {**{k: summary[k] for k in ("best", "label", "usage", "stop_reason", "elapsed_s", "offline")},
                         "learned": lessons}

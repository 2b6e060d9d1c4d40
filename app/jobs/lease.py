"""A job's life on a worker, and its end: claimed with a lease (an atomic
UPDATE), kept alive by a heartbeat, its trajectory and candidates saved after
every attempt, finished (or cancelled) in one place. A job whose worker died
(stale heartbeat) can be claimed again and resumes from its saved trajectory;
candidates are upserted by (job, attempt id), so none is lost or duplicated.
Cancellation is checked at every save. What the reaper sends again: reaper.py."""

from __future__ import annotations

import logging
import threading
from datetime import timedelta
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from agents.search import Trajectory

from ..db.base import utcnow
from ..db.models import Candidate, Job, User
from ..db.session import transaction
from ..errors import Conflict
from .reading.notify import notify_finished, publish_finished
from .reading.views import visible_job
from .specs import JobSpec, spec_of
from .status import LIVE, TERMINAL, JobStatus

log = logging.getLogger("kforge.jobs")


class JobStopped(Exception):
    """Cancellation was requested, or another worker took the lease."""


def claim(url: str, job_id: str, lease: str, stale_s: float) -> bool:
    """Take the job for this worker: a queued one, or a running one whose worker went silent."""
    now = utcnow()
    with transaction(url) as s:
        result = s.execute(
            update(Job).where(Job.id == job_id, Job.cancel_requested.is_(False), or_(
                Job.status == JobStatus.QUEUED,
                (Job.status == JobStatus.RUNNING) & (Job.heartbeat_at < now - timedelta(seconds=stale_s))))
            .values(status=JobStatus.RUNNING, lease=lease, heartbeat_at=now, runs=Job.runs + 1)
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
    """The job's end on this worker (or "queued" again when its lease moved):
    recorded, and announced to waiters once committed."""
    with transaction(url) as s:
        job = s.get(Job, job_id)
        if job is None or job.lease != lease:
            return
        job.status, job.error, job.finished_at, job.lease = status, error, utcnow(), None
        if result is not None:
            job.result = result
        if status in TERMINAL:
            notify_finished(s, job_id)
    publish_finished(*([job_id] if status in TERMINAL else []))


def record_backend(url: str, job_id: str, lease: str, choice: dict[str, Any]) -> JobSpec:
    """The backend this worker chose for the job (``auto`` resolved where the
    device is known), kept on the row so a resumed run keeps it; the new spec."""
    with transaction(url) as s:
        job = s.get(Job, job_id)
        if job is None or job.lease != lease:
            raise JobStopped("lease lost")
        job.backend = choice["backend"]
        job.config = {**(job.config or {}), "backend_choice": choice,
                      "device": choice["device"] or (job.config or {}).get("device")}
        s.flush()
        return spec_of(job)


def load_spec(url: str, job_id: str) -> JobSpec:
    with transaction(url) as s:
        return spec_of(s.get(Job, job_id))


def cancel_job(session: Session, user: User, job_id: str) -> Job:
    """Ask a job to stop: a queued one is cancelled at once, a running one at its worker's next save."""
    job = visible_job(session, user, job_id)
    if job.status in TERMINAL:
        raise Conflict(f"job {job_id} is already {job.status}")
    job.cancel_requested = True
    if job.status == JobStatus.QUEUED:
        job.status, job.finished_at = JobStatus.CANCELLED, utcnow()
        notify_finished(session, job.id)
    session.flush()
    return job


def unfinished_jobs(session: Session, owner_name: str) -> list[str]:
    """Ids of one user's queued or running jobs (the embedded MCP server resumes them)."""
    return list(session.scalars(select(Job.id).join(User, Job.owner_id == User.id).where(
        User.name == owner_name, Job.status.in_(LIVE))).all())

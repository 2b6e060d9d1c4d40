"""The jobs list: filters, search and keyset pagination.

Pages are cut by keyset on (created_at, id), newest first, never by OFFSET: the
database walks an index backwards from the cursor (ix_jobs_owner_created for a
user, ix_jobs_created_at for an admin) and reads one page, however deep the
page. The total is a count capped at COUNT_CAP rows, so it stays bounded too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any
from urllib.parse import urlencode

from sqlalchemy import Select, func, select, tuple_
from sqlalchemy.orm import Session, joinedload

from ...backends import BACKENDS
from ...db.models import Job, User
from ..status import JobStatus
from .views import candidate_counts

PAGE_SIZE = 50
COUNT_CAP = 10_000


@dataclass
class Filters:
    status: str = ""
    backend: str = ""
    gpu: str = ""  # "cpu" means no GPU kind
    owner: str = ""
    q: str = ""
    date_from: date | None = None
    date_to: date | None = None
    errors: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, params: Mapping[str, str], admin: bool) -> Filters:
        f = cls(q=params.get("q", "").strip()[:200], gpu=params.get("gpu", "").strip().lower()[:32],
                owner=params.get("owner", "").strip()[:100] if admin else "")
        status, backend = params.get("status", ""), params.get("backend", "")
        f.status = status if status in tuple(JobStatus) else ""
        f.backend = backend if backend in BACKENDS else ""
        if status and not f.status:
            f.errors.append(f"unknown status {status!r} ignored")
        for key in ("from", "to"):
            raw = params.get(key, "").strip()
            try:
                setattr(f, f"date_{key}", date.fromisoformat(raw) if raw else None)
            except ValueError:
                f.errors.append(f"{key}: {raw!r} is not a date (YYYY-MM-DD); ignored")
        return f

    def params(self) -> dict[str, str]:
        out = {"status": self.status, "backend": self.backend, "gpu": self.gpu, "owner": self.owner, "q": self.q,
               "from": self.date_from.isoformat() if self.date_from else "",
               "to": self.date_to.isoformat() if self.date_to else ""}
        return {k: v for k, v in out.items() if v}

    def url(self, **extra: str) -> str:
        return "/jobs?" + urlencode({**self.params(), **extra})

    def where(self, user: User) -> list[Any]:
        conds: list[Any] = []
        if not user.is_admin:
            conds.append(Job.owner_id == user.id)
        elif self.owner:
            conds.append(Job.owner_id == select(User.id).where(User.name == self.owner).scalar_subquery())
        if self.status:
            conds.append(Job.status == self.status)
        if self.backend:
            conds.append(Job.backend == self.backend)
        if self.gpu:
            conds.append(Job.gpu_kind.is_(None) if self.gpu == "cpu" else Job.gpu_kind == self.gpu)
        if self.q:
            escaped = self.q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            conds.append(Job.problem_name.ilike(f"%{escaped}%", escape="\\"))
        if self.date_from:
            conds.append(Job.created_at >= datetime.combine(self.date_from, time.min))
        if self.date_to:
            conds.append(Job.created_at < datetime.combine(self.date_to + timedelta(days=1), time.min))
        return conds


@dataclass
class Page:
    jobs: list[Job]
    counts: dict[str, int]
    total: int
    capped: bool
    older: str | None  # cursor of the next (older) page
    newer: str | None  # cursor of the previous (newer) page


def cursor_of(job: Job) -> str:
    return f"{job.created_at.isoformat()}~{job.id}"


def parse_cursor(raw: str | None) -> tuple[datetime, str] | None:
    if not raw or "~" not in raw:
        return None
    stamp, _, job_id = raw.partition("~")
    try:
        return datetime.fromisoformat(stamp), job_id
    except ValueError:
        return None


def list_page(session: Session, user: User, filters: Filters, before: str | None = None, after: str | None = None,
              size: int = PAGE_SIZE) -> Page:
    conds = filters.where(user)
    query: Select[tuple[Job]] = select(Job).options(joinedload(Job.owner)).where(*conds)
    key = tuple_(Job.created_at, Job.id)
    older_than, newer_than = parse_cursor(before), parse_cursor(after)
    if newer_than:
        # The plain created_at bound is what lets the database use the index; the row comparison breaks ties.
        query = query.where(Job.created_at >= newer_than[0], key > tuple_(*newer_than))
        rows = list(session.scalars(query.order_by(Job.created_at, Job.id).limit(size + 1)))
        has_newer, rows = len(rows) > size, rows[:size][::-1]
        has_older = True
    else:
        if older_than:
            query = query.where(Job.created_at <= older_than[0], key < tuple_(*older_than))
        rows = list(session.scalars(query.order_by(Job.created_at.desc(), Job.id.desc()).limit(size + 1)))
        has_older, rows = len(rows) > size, rows[:size]
        has_newer = older_than is not None
    total = session.scalar(select(func.count()).select_from(
        select(Job.id).where(*conds).limit(COUNT_CAP + 1).subquery())) or 0
    return Page(jobs=rows, counts=candidate_counts(session, [j.id for j in rows]), total=min(total, COUNT_CAP),
                capped=total > COUNT_CAP, older=cursor_of(rows[-1]) if rows and has_older else None,
                newer=cursor_of(rows[0]) if rows and has_newer else None)

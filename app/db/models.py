"""Users, API tokens, jobs and the candidates each job judged."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, Float, ForeignKey, Index, Integer, LargeBinary, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from .base import Base, UTCDateTime, utcnow


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ApiToken(Base):
    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    user: Mapped[User] = relationship()


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_owner_created", "owner_id", "created_at"),
                      Index("ix_jobs_status_heartbeat", "status", "heartbeat_at"))

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=lambda: str(uuid.uuid4()))
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    kind: Mapped[str] = mapped_column(String(16), default="optimize")  # optimize | evaluate
    status: Mapped[str] = mapped_column(String(16), default="queued", index=True)  # app.jobs.JobStatus
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    problem_name: Mapped[str] = mapped_column(String(200))
    reference: Mapped[str] = mapped_column(Text)
    candidate: Mapped[str | None] = mapped_column(Text)  # evaluate jobs only
    backend: Mapped[str] = mapped_column(String(16), default="triton")
    gpu_kind: Mapped[str | None] = mapped_column(String(32))
    queue: Mapped[str] = mapped_column(String(64), default="cpu")
    provider: Mapped[str] = mapped_column(String(32), default="offline")
    model: Mapped[str | None] = mapped_column(String(100))
    base_url: Mapped[str | None] = mapped_column(String(500))
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    trajectory: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    best_speedup: Mapped[float | None] = mapped_column(Float)
    best_attempt_id: Mapped[str | None] = mapped_column(String(64))
    error: Mapped[str | None] = mapped_column(Text)
    runs: Mapped[int] = mapped_column(Integer, default=0)
    lease: Mapped[str | None] = mapped_column(String(64))
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    owner: Mapped[User] = relationship()
    candidates: Mapped[list[Candidate]] = relationship(back_populates="job", order_by="Candidate.id",
                                                      cascade="all, delete-orphan")


class Candidate(Base):
    __tablename__ = "candidates"
    __table_args__ = (UniqueConstraint("job_id", "attempt_id", name="uq_candidates_job_attempt"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    attempt_id: Mapped[str] = mapped_column(String(64))
    round: Mapped[int] = mapped_column(Integer)
    strategy: Mapped[str] = mapped_column(Text, default="")
    source: Mapped[str] = mapped_column(String(16))
    parent_id: Mapped[str | None] = mapped_column(String(64))
    repair_of: Mapped[str | None] = mapped_column(String(64))
    verdict: Mapped[str] = mapped_column(String(16))
    reasons: Mapped[list[str]] = mapped_column(JSON, default=list)
    checks: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)
    check_details: Mapped[dict[str, str] | None] = mapped_column(JSON)
    speedup: Mapped[float | None] = mapped_column(Float)
    timing: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    code: Mapped[str] = mapped_column(Text, default="")
    input_tokens: Mapped[int] = mapped_column(Integer, default=0)
    output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    elapsed_s: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    job: Mapped[Job] = relationship(back_populates="candidates")


class KbStrategy(Base):
    """A knowledge-base strategy (knowledge_base.model.Strategy as JSON) with its embedding."""

    __tablename__ = "kb_strategies"

    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    vector: Mapped[bytes | None] = mapped_column(LargeBinary)
    embedder: Mapped[str | None] = mapped_column(String(100))
    updated_at: Mapped[float] = mapped_column(Float)


class KbArchive(Base):
    """The best verified kernel per (problem signature, backend, architecture)."""

    __tablename__ = "kb_archive"

    signature: Mapped[str] = mapped_column(String(100), primary_key=True)
    backend: Mapped[str] = mapped_column(String(16), primary_key=True)
    arch: Mapped[str] = mapped_column(String(64), primary_key=True)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)

"""A job's status: the one list of them, and which are final."""

from __future__ import annotations

from enum import StrEnum


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


# StrEnum members compare equal to their values: `row.status in TERMINAL` works on plain strings too.
TERMINAL = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)
LIVE = (JobStatus.QUEUED, JobStatus.RUNNING)

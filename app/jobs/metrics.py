"""Prometheus counters of jobs."""

from __future__ import annotations

from prometheus_client import Counter

JOBS_SUBMITTED = Counter("kforge_jobs_submitted_total", "Jobs submitted", ["kind", "queue"])

"""Prometheus counters and histograms of the API."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

JOBS_SUBMITTED = Counter("kforge_jobs_submitted_total", "Jobs submitted", ["kind", "queue"])
REQUEST_SECONDS = Histogram("kforge_request_seconds", "HTTP request latency", ["method", "route", "status"])

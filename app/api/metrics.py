"""Prometheus histograms of the API (the jobs' counters: app/jobs/metrics.py)."""

from __future__ import annotations

from prometheus_client import Histogram

REQUEST_SECONDS = Histogram("kforge_request_seconds", "HTTP request latency", ["method", "route", "status"])

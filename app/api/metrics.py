"""Prometheus metrics of the API (the jobs' counters: app/jobs/create.py):
request latency, and which dependency is down (readiness probes set the gauge;
every request that met an outage counts it)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

REQUEST_SECONDS = Histogram("kforge_request_seconds", "HTTP request latency", ["method", "route", "status"])
DEPENDENCY_UP = Gauge("kforge_dependency_up", "1 when the dependency answered the last probe (/readyz, /metrics)",
                      ["dependency"])
DEPENDENCY_ERRORS = Counter("kforge_dependency_errors_total", "Requests answered 503 because a dependency was down",
                            ["dependency"])

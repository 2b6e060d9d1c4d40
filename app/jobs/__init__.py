"""Jobs, owned in one place: every entry point (API routes, dashboard, Celery
workers, the embedded MCP server) goes through this package, and nothing
else writes a job's row.

- status.py: `JobStatus`, the one list of statuses; TERMINAL and LIVE.
- specs.py: the typed spec of each job kind (`OptimizeSpec`, `EvaluateSpec`), read from the row.
- create.py: making a job (a bundled problem or a checked reference) on its queue.
- execute.py: running one job on a worker.
- lease.py: claim, heartbeat, per-attempt saves, finish, cancel, what the reaper re-sends.
- sending/: to the workers -- broker.py (the Celery app, enqueue after commit:
  `enqueue_after_commit`, `job_session`), loop_send.py (from the event loop), reaper.py (sent again).
- reading/: views.py / core_views.py (ORM for the dashboard and MCP; Core rows for the API),
  listing.py (filters and pages), read_cache.py (GET /v1/jobs/{id} per API process),
  notify.py / wait.py (announcing a final status, and waiting for it without a thread).
"""

from __future__ import annotations

from .status import LIVE, TERMINAL, JobStatus

__all__ = ["LIVE", "TERMINAL", "JobStatus"]

"""every write of a job or its candidates is announced (NOTIFY kforge_job_changed)

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03 07:00:00

PostgreSQL only: row triggers on `jobs` and `candidates` send the job's id, and a
statement trigger on `users` sends `*` (an answer names its owner), on the channel
the API's read cache listens to (app/jobs/reading/read_cache.py). The notification is
delivered when the writing transaction commits, never for one rolled back.
SQLite has no NOTIFY and no read cache: nothing changes there.
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

FUNCTIONS = {
    "kforge_job_changed": "PERFORM pg_notify('kforge_job_changed', COALESCE(NEW.id, OLD.id)); RETURN NULL;",
    "kforge_candidate_changed":
        "PERFORM pg_notify('kforge_job_changed', COALESCE(NEW.job_id, OLD.job_id)); RETURN NULL;",
    "kforge_users_changed": "PERFORM pg_notify('kforge_job_changed', '*'); RETURN NULL;",
}
TRIGGERS = {
    "kforge_jobs_changed": ("jobs", "ROW", "kforge_job_changed"),
    "kforge_candidates_changed": ("candidates", "ROW", "kforge_candidate_changed"),
    "kforge_users_changed": ("users", "STATEMENT", "kforge_users_changed"),
}


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name, body in FUNCTIONS.items():
        op.execute(f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {body} END $$")
    for name, (table, level, function) in TRIGGERS.items():
        op.execute(f"CREATE TRIGGER {name} AFTER INSERT OR UPDATE OR DELETE ON {table} "
                   f"FOR EACH {level} EXECUTE FUNCTION {function}()")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name, (table, _, _) in TRIGGERS.items():
        op.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
    for name in FUNCTIONS:
        op.execute(f"DROP FUNCTION IF EXISTS {name}()")

"""timestamps carry their time zone (UTC)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24 06:20:00

PostgreSQL: every timestamp column becomes `timestamptz`; the stored values
were UTC wall times, so they are read `AT TIME ZONE 'UTC'`. SQLite has no
time-zone type: its columns keep the UTC wall time as text, and the model's
UTCDateTime type attaches UTC when reading, so nothing changes in the file.
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

COLUMNS = {
    "users": ("created_at",),
    "api_tokens": ("created_at", "last_used_at", "revoked_at"),
    "jobs": ("heartbeat_at", "created_at", "started_at", "finished_at"),
    "candidates": ("created_at",),
}


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, columns in COLUMNS.items():
        for col in columns:
            op.execute(f"ALTER TABLE {table} ALTER COLUMN {col} TYPE timestamptz USING {col} AT TIME ZONE 'UTC'")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, columns in COLUMNS.items():
        for col in columns:
            op.execute(f"ALTER TABLE {table} ALTER COLUMN {col} TYPE timestamp USING {col} AT TIME ZONE 'UTC'")

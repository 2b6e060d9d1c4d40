"""candidates keep every check's detail

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 08:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable: candidates stored before this revision have only the failed checks' details (in reasons).
    with op.batch_alter_table("candidates") as batch:
        batch.add_column(sa.Column("check_details", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("candidates") as batch:
        batch.drop_column("check_details")

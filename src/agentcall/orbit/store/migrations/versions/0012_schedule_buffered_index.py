"""Schedules: an index on `buffered_at`, so a claim reads the buffered firings (overlap policy
`buffer_one`) as an index range instead of scanning every schedule.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_schedules_buffered", "schedules", ["buffered_at"])


def downgrade() -> None:
    op.drop_index("ix_schedules_buffered", table_name="schedules")

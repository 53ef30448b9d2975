"""Schedules (a recurring task template, its spec and state) and their firings
(docs/orbit/schedules.md).

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agentcall.orbit.store.types import MYSQL_TABLE_ARGS, UtcDateTime, ident, long_text

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "schedules",
        sa.Column("id", ident(), primary_key=True),
        sa.Column("namespace_id", ident(), sa.ForeignKey("namespaces.id"), nullable=False),
        sa.Column("queue_id", ident(), sa.ForeignKey("queues.id"), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.Column("state", sa.String(8), nullable=False),
        sa.Column("note", sa.String(1000), nullable=True),
        sa.Column("template", long_text(), nullable=False),
        sa.Column("spec", sa.Text(), nullable=False),
        sa.Column("start_at", UtcDateTime(), nullable=True),
        sa.Column("end_at", UtcDateTime(), nullable=True),
        sa.Column("jitter_ms", sa.BigInteger(), nullable=False),
        sa.Column("catchup_window_ms", sa.BigInteger(), nullable=False),
        sa.Column("overlap", sa.String(16), nullable=False),
        sa.Column("next_fire_at", UtcDateTime(), nullable=True),
        sa.Column("claimed_by", sa.String(64), nullable=True),
        sa.Column("claim_until", UtcDateTime(), nullable=True),
        sa.Column("last_task_id", ident(), nullable=True),
        sa.Column("buffered_at", UtcDateTime(), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.Index("ix_schedules_namespace", "namespace_id", "id"),
        sa.Index("ix_schedules_due", "state", "next_fire_at"),
        **MYSQL_TABLE_ARGS,
    )
    op.create_table(
        "schedule_firings",
        sa.Column("id", ident(), primary_key=True),
        sa.Column("schedule_id", ident(), sa.ForeignKey("schedules.id"), nullable=False),
        sa.Column("nominal_at", UtcDateTime(), nullable=False),
        sa.Column("fired_at", UtcDateTime(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("task_id", ident(), nullable=True),
        sa.Column("deduplicated", sa.Boolean(), nullable=False),
        sa.Column("slots", sa.Integer(), nullable=False),
        sa.UniqueConstraint("schedule_id", "kind", "nominal_at", name="uq_schedule_firings_slot"),
        sa.Index("ix_schedule_firings_recent", "schedule_id", "fired_at", "id"),
        **MYSQL_TABLE_ARGS,
    )


def downgrade() -> None:
    op.drop_table("schedule_firings")
    op.drop_table("schedules")

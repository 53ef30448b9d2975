"""Execution: task attempts and their evidence; task columns for the outcome error and the
live attempt; indexes for leasing and for the deadline sweeper.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agentcall.orbit.store.types import MYSQL_TABLE_ARGS, UtcDateTime, ident

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tasks") as batch:
        batch.add_column(sa.Column("error_code", sa.String(32), nullable=True))
        batch.add_column(sa.Column("error_message", sa.Text(), nullable=True))
        batch.add_column(sa.Column("attempt_error", sa.Text(), nullable=True))
        batch.add_column(sa.Column("current_attempt_id", ident(), nullable=True))
        batch.add_column(sa.Column("lease_count", sa.Integer(), nullable=False, server_default="0"))
    op.create_index("ix_tasks_lease", "tasks", ["queue_id", "state", "available_at", "id"])
    op.create_index("ix_tasks_state_deadline", "tasks", ["state", "deadline_at"])
    op.create_index("ix_tasks_state_start_deadline", "tasks", ["state", "start_deadline_at"])
    _attempts()
    _evidence()


def _attempts() -> None:
    op.create_table(
        "task_attempts",
        sa.Column("id", ident(), primary_key=True),
        sa.Column("task_id", ident(), sa.ForeignKey("tasks.id"), nullable=False),
        sa.Column("namespace_id", ident(), nullable=False),
        sa.Column("queue_id", ident(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("lease_token_sha256", sa.String(64), nullable=False),
        sa.Column("token_id", ident(), nullable=False),
        sa.Column("connection_id", ident(), nullable=False),
        sa.Column("worker_name", sa.String(128), nullable=False),
        sa.Column("worker_instance_id", ident(), nullable=False),
        sa.Column("worker_sdk", sa.String(128), nullable=True),
        sa.Column("worker_host", sa.String(128), nullable=True),
        sa.Column("worker_pid", sa.BigInteger(), nullable=True),
        sa.Column("leased_at", UtcDateTime(), nullable=False),
        sa.Column("lease_expires_at", UtcDateTime(), nullable=False),
        sa.Column("attempt_deadline_at", UtcDateTime(), nullable=False),
        sa.Column("started_at", UtcDateTime(), nullable=True),
        sa.Column("last_heartbeat_at", UtcDateTime(), nullable=True),
        sa.Column("ended_at", UtcDateTime(), nullable=True),
        sa.Column("end_reason", sa.String(32), nullable=True),
        sa.Column("error_code", sa.String(64), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("error_retryable", sa.Boolean(), nullable=True),
        sa.Column("end_digest", sa.String(64), nullable=True),
        sa.Column("task_state_after", sa.String(16), nullable=True),
        sa.Column("task_revision_after", sa.BigInteger(), nullable=True),
        sa.Column("evidence_count", sa.Integer(), nullable=False),
        sa.UniqueConstraint("task_id", "number", name="uq_task_attempts_task_number"),
        **MYSQL_TABLE_ARGS,
    )
    op.create_index("ix_task_attempts_state_lease", "task_attempts", ["state", "lease_expires_at"])
    op.create_index("ix_task_attempts_connection", "task_attempts", ["connection_id", "state"])


def _evidence() -> None:
    op.create_table(
        "task_attempt_evidence",
        sa.Column("id", ident(), primary_key=True),
        sa.Column("attempt_id", ident(), sa.ForeignKey("task_attempts.id"), nullable=False),
        sa.Column("task_id", ident(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("ev_key", sa.String(128), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("name", sa.String(256), nullable=True),
        sa.Column("uri", sa.Text(), nullable=True),
        sa.Column("media_type", sa.String(128), nullable=True),
        sa.Column("size_bytes", sa.BigInteger(), nullable=True),
        sa.Column("sha256", sa.String(64), nullable=True),
        sa.Column("data", sa.Text(), nullable=True),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.UniqueConstraint("attempt_id", "ev_key", name="uq_task_attempt_evidence_key"),
        **MYSQL_TABLE_ARGS,
    )


def downgrade() -> None:
    op.drop_table("task_attempt_evidence")
    op.drop_table("task_attempts")
    for index in ("ix_tasks_state_start_deadline", "ix_tasks_state_deadline", "ix_tasks_lease"):
        op.drop_index(index, table_name="tasks")
    with op.batch_alter_table("tasks") as batch:
        for column in (
            "lease_count",
            "current_attempt_id",
            "attempt_error",
            "error_message",
            "error_code",
        ):
            batch.drop_column(column)

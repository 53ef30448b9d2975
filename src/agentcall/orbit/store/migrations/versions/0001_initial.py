"""Tenancy (namespaces, queues, tokens, token scopes), tasks, task events, audit log and
idempotency records: the Task API v1 schema.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agentcall.orbit.store.types import MYSQL_TABLE_ARGS, UtcDateTime, ident, long_text

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    _tenancy()
    _tasks()
    _journal()
    op.create_table(
        "idempotency_records",
        sa.Column("namespace_id", ident(), primary_key=True),
        sa.Column("operation", sa.String(32), primary_key=True),
        sa.Column("target", sa.String(32), primary_key=True),
        sa.Column("idem_key", sa.String(128), primary_key=True),
        sa.Column("digest_alg", sa.String(32), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("task_id", ident(), nullable=False),
        sa.Column("status_code", sa.SmallInteger(), nullable=False),
        sa.Column("receipt", long_text(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        **MYSQL_TABLE_ARGS,
    )


def _tenancy() -> None:
    op.create_table(
        "namespaces",
        sa.Column("id", ident(), primary_key=True),
        sa.Column("name", sa.String(128), nullable=False, unique=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        **MYSQL_TABLE_ARGS,
    )
    op.create_table(
        "queues",
        sa.Column("id", ident(), primary_key=True),
        sa.Column("namespace_id", ident(), sa.ForeignKey("namespaces.id"), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.UniqueConstraint("namespace_id", "name", name="uq_queues_namespace_name"),
        **MYSQL_TABLE_ARGS,
    )
    op.create_table(
        "tokens",
        sa.Column("id", ident(), primary_key=True),
        sa.Column("namespace_id", ident(), sa.ForeignKey("namespaces.id"), nullable=False),
        sa.Column("secret_sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("permissions", sa.String(255), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=True),
        sa.Column("revoked_at", UtcDateTime(), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        **MYSQL_TABLE_ARGS,
    )
    op.create_table(
        "token_queues",
        sa.Column("token_id", ident(), sa.ForeignKey("tokens.id"), primary_key=True),
        sa.Column("queue_id", ident(), sa.ForeignKey("queues.id"), primary_key=True),
        **MYSQL_TABLE_ARGS,
    )


def _tasks() -> None:
    op.create_table(
        "tasks",
        sa.Column("id", ident(), primary_key=True),
        sa.Column("namespace_id", ident(), nullable=False),
        sa.Column("queue_id", ident(), sa.ForeignKey("queues.id"), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.Column("handler", sa.String(128), nullable=False),
        sa.Column("handler_version", sa.String(64), nullable=False),
        sa.Column("payload_version", sa.String(32), nullable=False),
        sa.Column("payload", long_text(), nullable=False),
        sa.Column("business_key", sa.String(191), nullable=True),
        sa.Column("available_at", UtcDateTime(), nullable=False),
        sa.Column("start_deadline_at", UtcDateTime(), nullable=True),
        sa.Column("deadline_at", UtcDateTime(), nullable=False),
        sa.Column("task_timeout_ms", sa.BigInteger(), nullable=False),
        sa.Column("recovery_safety", sa.String(16), nullable=False),
        sa.Column("retry_max_attempts", sa.Integer(), nullable=False),
        sa.Column("retry_initial_delay_ms", sa.BigInteger(), nullable=False),
        sa.Column("retry_max_delay_ms", sa.BigInteger(), nullable=False),
        sa.Column("retry_attempt_timeout_ms", sa.BigInteger(), nullable=False),
        sa.Column("attempt_count", sa.Integer(), nullable=False),
        sa.Column("result", long_text(), nullable=True),
        sa.Column("cancel_requested_at", UtcDateTime(), nullable=True),
        sa.Column("completed_at", UtcDateTime(), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        **MYSQL_TABLE_ARGS,
    )
    op.create_index("ix_tasks_queue_created", "tasks", ["queue_id", "created_at", "id"])
    op.create_index(
        "ix_tasks_queue_state_created", "tasks", ["queue_id", "state", "created_at", "id"]
    )


def _journal() -> None:
    op.create_table(
        "task_events",
        sa.Column("id", ident(), primary_key=True),
        sa.Column("task_id", ident(), sa.ForeignKey("tasks.id"), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("from_state", sa.String(16), nullable=True),
        sa.Column("to_state", sa.String(16), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.UniqueConstraint("task_id", "revision", name="uq_task_events_task_revision"),
        **MYSQL_TABLE_ARGS,
    )
    op.create_table(
        "audit_log",
        sa.Column("id", ident(), primary_key=True),
        sa.Column("namespace_id", ident(), nullable=False),
        sa.Column("token_id", ident(), nullable=False),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("task_id", ident(), nullable=True),
        sa.Column("queue_id", ident(), nullable=True),
        sa.Column("handler", sa.String(128), nullable=True),
        sa.Column("request_id", ident(), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        **MYSQL_TABLE_ARGS,
    )
    op.create_index("ix_audit_namespace_created", "audit_log", ["namespace_id", "created_at"])


def downgrade() -> None:
    for table in (
        "idempotency_records",
        "audit_log",
        "task_events",
        "tasks",
        "token_queues",
        "tokens",
        "queues",
        "namespaces",
    ):
        op.drop_table(table)

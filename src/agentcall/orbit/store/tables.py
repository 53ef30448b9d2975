"""The live schema, one group per concept. Migrations create exactly this (a test compares)."""

from __future__ import annotations

import importlib

import sqlalchemy as sa

from agentcall.orbit.store.types import MYSQL_TABLE_ARGS, UtcDateTime, ident, long_text

metadata = sa.MetaData()

# ---- tenancy: namespaces, queues, tokens and their queue scopes -------------------------

namespaces = sa.Table(
    "namespaces",
    metadata,
    sa.Column("id", ident(), primary_key=True),
    sa.Column("name", sa.String(128), nullable=False, unique=True),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    **MYSQL_TABLE_ARGS,
)

queues = sa.Table(
    "queues",
    metadata,
    sa.Column("id", ident(), primary_key=True),
    sa.Column("namespace_id", ident(), sa.ForeignKey("namespaces.id"), nullable=False),
    sa.Column("name", sa.String(128), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.UniqueConstraint("namespace_id", "name", name="uq_queues_namespace_name"),
    **MYSQL_TABLE_ARGS,
)

tokens = sa.Table(
    "tokens",
    metadata,
    sa.Column("id", ident(), primary_key=True),
    sa.Column("namespace_id", ident(), sa.ForeignKey("namespaces.id"), nullable=False),
    sa.Column("secret_sha256", sa.String(64), nullable=False, unique=True),
    sa.Column("permissions", sa.String(255), nullable=False),  # space-separated
    sa.Column("expires_at", UtcDateTime(), nullable=True),
    sa.Column("revoked_at", UtcDateTime(), nullable=True),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    **MYSQL_TABLE_ARGS,
)

token_queues = sa.Table(
    "token_queues",
    metadata,
    sa.Column("token_id", ident(), sa.ForeignKey("tokens.id"), primary_key=True),
    sa.Column("queue_id", ident(), sa.ForeignKey("queues.id"), primary_key=True),
    **MYSQL_TABLE_ARGS,
)

# ---- tasks ------------------------------------------------------------------------------

tasks = sa.Table(
    "tasks",
    metadata,
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
    sa.Index("ix_tasks_queue_created", "queue_id", "created_at", "id"),
    sa.Index("ix_tasks_queue_state_created", "queue_id", "state", "created_at", "id"),
    **MYSQL_TABLE_ARGS,
)

# ---- journal: task events and the audit log ---------------------------------------------

task_events = sa.Table(
    "task_events",
    metadata,
    sa.Column("id", ident(), primary_key=True),
    sa.Column("task_id", ident(), sa.ForeignKey("tasks.id"), nullable=False),
    sa.Column("revision", sa.BigInteger(), nullable=False),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("from_state", sa.String(16), nullable=True),
    sa.Column("to_state", sa.String(16), nullable=False),
    sa.Column("detail", sa.Text(), nullable=True),  # small JSON, never the payload
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.UniqueConstraint("task_id", "revision", name="uq_task_events_task_revision"),
    **MYSQL_TABLE_ARGS,
)

audit_log = sa.Table(
    "audit_log",
    metadata,
    sa.Column("id", ident(), primary_key=True),
    sa.Column("namespace_id", ident(), nullable=False),
    sa.Column("token_id", ident(), nullable=False),
    sa.Column("action", sa.String(64), nullable=False),
    sa.Column("task_id", ident(), nullable=True),
    sa.Column("queue_id", ident(), nullable=True),
    sa.Column("handler", sa.String(128), nullable=True),
    sa.Column("request_id", ident(), nullable=True),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Index("ix_audit_namespace_created", "namespace_id", "created_at"),
    **MYSQL_TABLE_ARGS,
)

# ---- idempotency: identity, digest and the original receipt -----------------------------

idempotency_records = sa.Table(
    "idempotency_records",
    metadata,
    sa.Column("namespace_id", ident(), primary_key=True),
    sa.Column("operation", sa.String(32), primary_key=True),
    sa.Column("target", sa.String(32), primary_key=True),  # "" or the task ID (cancel)
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

# ---- later phases -----------------------------------------------------------------------
# P2/P3 define their tables (and extra `tasks` columns) on this same metadata in their own
# modules; importing them here keeps the live schema complete wherever it is used, which the
# migration-parity test relies on. A phase that is not installed yet is skipped.
EXTENSIONS = ("agentcall.orbit.store.execution_tables",)


def _load_extensions() -> None:
    for module in EXTENSIONS:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name not in (module, module.rpartition(".")[0]):
                raise


_load_extensions()

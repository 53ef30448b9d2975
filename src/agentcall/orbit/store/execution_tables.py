"""The P2 execution schema (migration 0002): attempts, their evidence, and the columns P2 adds
to `tasks`. Defined on the one shared `orbit.store.tables.metadata` so that the live schema is
complete wherever it is imported (`orbit.store.tables` loads it as an extension)."""

from __future__ import annotations

import sqlalchemy as sa

from agentcall.orbit.store.tables import metadata, tasks
from agentcall.orbit.store.types import MYSQL_TABLE_ARGS, UtcDateTime, ident

# ---- columns P2 adds to tasks ------------------------------------------------------------
# error.code / error.message of a FAILED or NEEDS_REVIEW task; the deciding attempt's own
# error as small JSON {code,message,retryable}; the live attempt while LEASED/RUNNING.
TASK_COLUMNS = (
    sa.Column("error_code", sa.String(32), nullable=True),
    sa.Column("error_message", sa.Text(), nullable=True),
    sa.Column("attempt_error", sa.Text(), nullable=True),
    sa.Column("current_attempt_id", ident(), nullable=True),
    sa.Column("lease_count", sa.Integer(), nullable=False, server_default="0"),
)
if "error_code" not in tasks.c:
    for column in TASK_COLUMNS:
        tasks.append_column(column)
    # leasing: WAITING rows of a queue in readiness order; sweeper: WAITING past a deadline
    sa.Index("ix_tasks_lease", tasks.c.queue_id, tasks.c.state, tasks.c.available_at, tasks.c.id)
    sa.Index("ix_tasks_state_deadline", tasks.c.state, tasks.c.deadline_at)
    sa.Index("ix_tasks_state_start_deadline", tasks.c.state, tasks.c.start_deadline_at)

task_attempts = sa.Table(
    "task_attempts",
    metadata,
    sa.Column("id", ident(), primary_key=True),
    sa.Column("task_id", ident(), sa.ForeignKey("tasks.id"), nullable=False),
    sa.Column("namespace_id", ident(), nullable=False),
    sa.Column("queue_id", ident(), nullable=False),
    sa.Column("number", sa.Integer(), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("lease_token_sha256", sa.String(64), nullable=False),
    sa.Column("token_id", ident(), nullable=False),  # the credential that leased
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
    sa.Column("end_digest", sa.String(64), nullable=True),  # recognises a resent result
    sa.Column("task_state_after", sa.String(16), nullable=True),
    sa.Column("task_revision_after", sa.BigInteger(), nullable=True),
    sa.Column("evidence_count", sa.Integer(), nullable=False),
    sa.UniqueConstraint("task_id", "number", name="uq_task_attempts_task_number"),
    sa.Index("ix_task_attempts_state_lease", "state", "lease_expires_at"),
    sa.Index("ix_task_attempts_connection", "connection_id", "state"),
    **MYSQL_TABLE_ARGS,
)

task_attempt_evidence = sa.Table(
    "task_attempt_evidence",
    metadata,
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

"""The live schema, one group per concept, each table defined whole. The numbered migrations
(`migrations/versions`) build it step by step and create exactly this (a test compares)."""

from __future__ import annotations

import sqlalchemy as sa

from agentcall.orbit.store import search_schema
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
    sa.Column("name", sa.String(128), nullable=True),  # the audit log's actor name
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
    # error.code / error.message of a FAILED or NEEDS_REVIEW task; the deciding attempt's own
    # error as small JSON {code,message,retryable}; the live attempt while LEASED/RUNNING
    sa.Column("error_code", sa.String(32), nullable=True),
    sa.Column("error_message", sa.Text(), nullable=True),
    sa.Column("attempt_error", sa.Text(), nullable=True),
    sa.Column("current_attempt_id", ident(), nullable=True),
    sa.Column("lease_count", sa.Integer(), nullable=False, server_default="0"),
    # the W3C traceparent of the submit span while tracing is on (docs/orbit/tracing.md)
    sa.Column("trace_parent", sa.String(55), nullable=True),
    sa.Index("ix_tasks_queue_created", "queue_id", "created_at", "id"),
    sa.Index("ix_tasks_queue_state_created", "queue_id", "state", "created_at", "id"),
    # flow control (docs/orbit/flow-control.md): lease_rank is 9 - priority, lease_order
    # agentcall.orbit.domain.lease_order (written with available_at); keys NULL unless set
    sa.Column("lease_rank", sa.SmallInteger(), nullable=False, server_default="4"),
    sa.Column("lease_order", sa.BigInteger(), nullable=False, server_default="0"),
    sa.Column("concurrency_key", sa.String(191), nullable=True),
    sa.Column("fairness_key", sa.String(191), nullable=True),
    sa.Column("fairness_weight", sa.SmallInteger(), nullable=False, server_default="1"),
    # leasing: WAITING rows of a queue in lease order, ties by id (read in index order, no
    # sort), available_at after them (a queue's readiness read from the index alone); a fair
    # queue's heads per fairness key; sweeper: WAITING past a deadline
    sa.Index("ix_tasks_lease", "queue_id", "state", "lease_order", "id", "available_at"),
    sa.Index("ix_tasks_fair", "queue_id", "state", "fairness_key", "lease_order", "id"),
    sa.Index("ix_tasks_state_deadline", "state", "deadline_at"),
    sa.Index("ix_tasks_state_start_deadline", "state", "start_deadline_at"),
    *search_schema.search_indexes(),  # agentcall.orbit.store.search_schema
    **MYSQL_TABLE_ARGS,
)

# ---- flow control: a queue's settings, its token buckets and fairness passes ------------

queue_flow = sa.Table(
    "queue_flow",
    metadata,
    sa.Column("queue_id", ident(), sa.ForeignKey("queues.id"), primary_key=True),
    sa.Column("revision", sa.BigInteger(), nullable=False),
    sa.Column("settings", sa.Text(), nullable=False),  # JSON (domain.flow_settings)
    sa.Column("updated_at", UtcDateTime(), nullable=False),
    **MYSQL_TABLE_ARGS,
)

# one row per (queue, kind, key): kind "bucket" (level: milli-tokens, at: last refill) or
# "pass" (level: the fairness key's pass); the lease transaction locks the queue_flow row first
flow_counters = sa.Table(
    "flow_counters",
    metadata,
    sa.Column("queue_id", ident(), sa.ForeignKey("queues.id"), primary_key=True),
    sa.Column("kind", sa.String(8), primary_key=True),
    sa.Column("flow_key", sa.String(191), primary_key=True),
    sa.Column("level", sa.BigInteger(), nullable=False),
    sa.Column("at", UtcDateTime(), nullable=False),
    **MYSQL_TABLE_ARGS,
)

# ---- schedules: a recurring task template, its spec and state; one row per firing -------
# (docs/orbit/schedules.md). template and spec are JSON; next_fire_at is the next nominal
# time (NULL when paused or ended); a server fires a due schedule after claiming it with a
# conditional UPDATE of claimed_by/claim_until (never a held row lock); last_task_id is the
# previous firing's task (overlap policies) and buffered_at the slot kept by buffer_one.

schedules = sa.Table(
    "schedules",
    metadata,
    sa.Column("id", ident(), primary_key=True),
    sa.Column("namespace_id", ident(), sa.ForeignKey("namespaces.id"), nullable=False),
    sa.Column("queue_id", ident(), sa.ForeignKey("queues.id"), nullable=False),
    sa.Column("revision", sa.BigInteger(), nullable=False),
    sa.Column("state", sa.String(8), nullable=False),  # active or paused
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
    sa.Index("ix_schedules_buffered", "buffered_at"),
    **MYSQL_TABLE_ARGS,
)

# kind: scheduled, trigger or backfill; outcome: fired, skipped_overlap, missed (slots: how
# many slots one record counts), backfilled or triggered; one record per (schedule, kind, slot)
schedule_firings = sa.Table(
    "schedule_firings",
    metadata,
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
    sa.Column("actor_name", sa.String(128), nullable=True),
    sa.Column("origin", sa.String(16), nullable=True),  # api, cli, console
    sa.Column("remote_addr", sa.String(64), nullable=True),
    sa.Column("target_kind", sa.String(32), nullable=True),
    sa.Column("target_id", sa.String(64), nullable=True),
    sa.Column("detail", sa.Text(), nullable=True),  # JSON, never a secret
    sa.Index("ix_audit_namespace_created", "namespace_id", "created_at"),
    sa.Index("ix_audit_created", "created_at"),
    sa.Index("ix_audit_namespace_action", "namespace_id", "action", "created_at"),
    sa.Index("ix_audit_namespace_actor", "namespace_id", "token_id", "created_at"),
    sa.Index("ix_audit_namespace_target", "namespace_id", "target_id", "created_at"),
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

# ---- attempts and their evidence --------------------------------------------------------

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

# ---- server processes: registrations for cross-process wake-ups (agentcall.orbit.domain.peers) ---

orbit_servers = sa.Table(
    "orbit_servers",
    metadata,
    sa.Column("id", ident(), primary_key=True),
    sa.Column("host", sa.String(255), nullable=False),  # where it hears hints (UDP)
    sa.Column("port", sa.Integer(), nullable=False),
    sa.Column("started_at", UtcDateTime(), nullable=False),
    sa.Column("heartbeat_at", UtcDateTime(), nullable=False),
    **MYSQL_TABLE_ARGS,
)

# ---- workers connected to each server process (agentcall.orbit.domain.worker_directory) ----------

orbit_server_workers = sa.Table(
    "orbit_server_workers",
    metadata,
    sa.Column("connection_id", ident(), primary_key=True),
    sa.Column("server_id", ident(), nullable=False),  # orbit_servers.id of its process
    sa.Column("namespace_id", ident(), nullable=False),
    sa.Column("server", sa.String(255), nullable=False),  # "host:pid" of its process
    sa.Column("name", sa.String(128), nullable=False),
    sa.Column("instance_id", ident(), nullable=False),
    sa.Column("sdk", sa.String(128), nullable=True),
    sa.Column("host", sa.String(128), nullable=True),
    sa.Column("pid", sa.Integer(), nullable=True),
    sa.Column("queues", sa.Text(), nullable=False),  # JSON list of queue ids, worker's order
    sa.Column("handlers", sa.Text(), nullable=False),  # JSON list of [handler, version]
    sa.Column("slots", sa.Integer(), nullable=False),
    sa.Column("in_flight", sa.Integer(), nullable=False),
    sa.Column("connected_at", UtcDateTime(), nullable=False),
    sa.Column("last_heartbeat_at", UtcDateTime(), nullable=False),
    sa.Index("ix_orbit_server_workers_namespace", "namespace_id"),
    sa.Index("ix_orbit_server_workers_server", "server_id"),
    **MYSQL_TABLE_ARGS,
)

# ---- idle worker slots offered to the other server processes (agentcall.orbit.domain.offers) -----

orbit_worker_offers = sa.Table(
    "orbit_worker_offers",
    metadata,
    sa.Column("id", ident(), primary_key=True),
    sa.Column("server_id", ident(), nullable=False),  # orbit_servers.id of the offering process
    sa.Column("connection_id", ident(), nullable=False),
    sa.Column("namespace_id", ident(), nullable=False),
    sa.Column("token_id", ident(), nullable=False),
    sa.Column("worker_name", sa.String(128), nullable=False),
    sa.Column("worker_instance_id", ident(), nullable=False),
    sa.Column("worker_sdk", sa.String(128), nullable=True),
    sa.Column("worker_host", sa.String(128), nullable=True),
    sa.Column("worker_pid", sa.BigInteger(), nullable=True),
    sa.Column("queues", sa.Text(), nullable=False),  # JSON list of queue ids
    sa.Column("handlers", sa.Text(), nullable=False),  # JSON list of [handler, version]
    # the attempt a claim creates: its id and its lease token's digest, chosen by the
    # offering process (only it knows the token, and sends it to its worker)
    sa.Column("attempt_id", ident(), nullable=False),
    sa.Column("lease_token_sha256", sa.String(64), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("task_id", ident(), nullable=True),  # set by the claim, in the submit's transaction
    sa.Column("claimed_at", UtcDateTime(), nullable=True),
    sa.Index("ix_orbit_worker_offers_namespace", "namespace_id", "task_id"),
    sa.Index("ix_orbit_worker_offers_server", "server_id", "task_id"),
    **MYSQL_TABLE_ARGS,
)

# ---- console sign-ins (agentcall.orbit.store.sessions): a session id's digest, bound to a token --

console_sessions = sa.Table(
    "console_sessions",
    metadata,
    sa.Column("id_sha256", sa.String(64), primary_key=True),  # the cookie's value is never kept
    sa.Column("token_id", ident(), sa.ForeignKey("tokens.id"), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("seen_at", UtcDateTime(), nullable=False),  # idle expiry counts from here
    sa.Column("expires_at", UtcDateTime(), nullable=False),  # absolute expiry
    sa.Index("ix_console_sessions_token", "token_id"),
    sa.Index("ix_console_sessions_expires", "expires_at"),
    **MYSQL_TABLE_ARGS,
)

bulk_operations, bulk_operation_tasks = search_schema.bulk_tables(metadata)  # bulk operations

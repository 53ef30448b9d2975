"""The tables and indexes of task search and bulk operations, part of the live schema
(`agentcall.orbit.store.tables` builds them into its metadata; migration 0009 creates them).

Search: each filter has an index whose leading columns are (queue_id, the filtered column)
and, for an equality, continue with (created_at, id), so a filter's first page reads about
`limit` index entries in order (plans: docs/orbit/search.md).

Bulk: an operation (its filter, action, progress and the claim of the server process running
it) and the tasks it matched, each with the revision it had then: the expected revision of
the write, so a task that changed since is skipped."""

from __future__ import annotations

import sqlalchemy as sa

from agentcall.orbit.store.types import MYSQL_TABLE_ARGS, UtcDateTime, ident

SEARCH_INDEXES: dict[str, tuple[str, ...]] = {
    "ix_tasks_search_handler": ("queue_id", "handler", "created_at", "id"),
    "ix_tasks_search_handler_version": (
        "queue_id",
        "handler",
        "handler_version",
        "created_at",
        "id",
    ),
    "ix_tasks_search_business_key": ("queue_id", "business_key", "created_at", "id"),
    "ix_tasks_search_error": ("queue_id", "error_code", "created_at", "id"),
    "ix_tasks_search_completed": ("queue_id", "completed_at", "id"),
}


def search_indexes() -> list[sa.Index]:
    return [sa.Index(name, *columns) for name, columns in SEARCH_INDEXES.items()]


def bulk_tables(metadata: sa.MetaData) -> tuple[sa.Table, sa.Table]:
    operations = sa.Table(
        "bulk_operations",
        metadata,
        sa.Column("id", ident(), primary_key=True),
        sa.Column("namespace_id", ident(), nullable=False),
        sa.Column("token_id", ident(), nullable=False),  # whose permissions each batch uses
        sa.Column("idempotency_key", sa.String(128), nullable=False),
        sa.Column("request_id", ident(), nullable=False),
        sa.Column("queue_id", ident(), nullable=False),
        sa.Column("filter", sa.Text(), nullable=False),  # JSON (agentcall.orbit.domain.search)
        sa.Column("action", sa.String(16), nullable=False),  # cancel | retry | resolve
        sa.Column("action_body", sa.Text(), nullable=False),  # JSON: reason, outcome, ...
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("next_seq", sa.Integer(), nullable=False),  # items below it have an outcome
        sa.Column("done_count", sa.Integer(), nullable=False),
        sa.Column("skipped_count", sa.Integer(), nullable=False),
        sa.Column("failed_count", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("claimed_by", ident(), nullable=True),  # the server process running it
        sa.Column("claim_until", UtcDateTime(), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.Column("finished_at", UtcDateTime(), nullable=True),
        sa.UniqueConstraint("namespace_id", "idempotency_key", name="uq_bulk_operations_key"),
        sa.Index("ix_bulk_operations_state", "state", "claim_until"),
        sa.Index("ix_bulk_operations_namespace_created", "namespace_id", "created_at", "id"),
        **MYSQL_TABLE_ARGS,
    )
    items = sa.Table(
        "bulk_operation_tasks",
        metadata,
        sa.Column("operation_id", ident(), sa.ForeignKey("bulk_operations.id"), primary_key=True),
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("task_id", ident(), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),  # as matched: the expected one
        sa.Column("outcome", sa.String(16), nullable=True),  # DONE | SKIPPED | FAILED
        sa.Column("message", sa.String(255), nullable=True),
        **MYSQL_TABLE_ARGS,
    )
    return operations, items

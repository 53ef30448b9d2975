"""Task search indexes and tracked bulk operations (agentcall.orbit.store.search_schema): an
operation's filter, action, progress and claim, and the tasks it matched with the revision
each had then. The names are written out here: a migration does not change with the code.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agentcall.orbit.store.types import MYSQL_TABLE_ARGS, UtcDateTime, ident

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

SEARCH_INDEXES = {
    "ix_tasks_search_handler": ["queue_id", "handler", "created_at", "id"],
    "ix_tasks_search_handler_version": [
        "queue_id",
        "handler",
        "handler_version",
        "created_at",
        "id",
    ],
    "ix_tasks_search_business_key": ["queue_id", "business_key", "created_at", "id"],
    "ix_tasks_search_error": ["queue_id", "error_code", "created_at", "id"],
    "ix_tasks_search_completed": ["queue_id", "completed_at", "id"],
}


def upgrade() -> None:
    for name, columns in SEARCH_INDEXES.items():
        op.create_index(name, "tasks", list(columns))
    op.create_table(
        "bulk_operations",
        sa.Column("id", ident(), primary_key=True),
        sa.Column("namespace_id", ident(), nullable=False),
        sa.Column("token_id", ident(), nullable=False),
        sa.Column("idempotency_key", sa.String(128), nullable=False),
        sa.Column("request_id", ident(), nullable=False),
        sa.Column("queue_id", ident(), nullable=False),
        sa.Column("filter", sa.Text(), nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("action_body", sa.Text(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("next_seq", sa.Integer(), nullable=False),
        sa.Column("done_count", sa.Integer(), nullable=False),
        sa.Column("skipped_count", sa.Integer(), nullable=False),
        sa.Column("failed_count", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("claimed_by", ident(), nullable=True),
        sa.Column("claim_until", UtcDateTime(), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.Column("finished_at", UtcDateTime(), nullable=True),
        sa.UniqueConstraint("namespace_id", "idempotency_key", name="uq_bulk_operations_key"),
        **MYSQL_TABLE_ARGS,
    )
    op.create_index("ix_bulk_operations_state", "bulk_operations", ["state", "claim_until"])
    op.create_index(
        "ix_bulk_operations_namespace_created",
        "bulk_operations",
        ["namespace_id", "created_at", "id"],
    )
    op.create_table(
        "bulk_operation_tasks",
        sa.Column("operation_id", ident(), sa.ForeignKey("bulk_operations.id"), primary_key=True),
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("task_id", ident(), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=True),
        sa.Column("message", sa.String(255), nullable=True),
        **MYSQL_TABLE_ARGS,
    )


def downgrade() -> None:
    op.drop_table("bulk_operation_tasks")
    op.drop_table("bulk_operations")
    for name in SEARCH_INDEXES:
        op.drop_index(name, "tasks")

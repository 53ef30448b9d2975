"""Flow control: task priority, concurrency and fairness keys, queue limits
(docs/orbit/flow-control.md). The tasks' lease index gains the priority (as lease_rank, 9 -
priority, ascending), a fair queue reads its heads per fairness key, a queue's settings live
in queue_flow and its token buckets and fairness passes in flow_counters.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agentcall.orbit.store.types import MYSQL_TABLE_ARGS, UtcDateTime, ident

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tasks") as batch:
        batch.add_column(
            sa.Column("lease_rank", sa.SmallInteger(), nullable=False, server_default="4")
        )
        batch.add_column(sa.Column("concurrency_key", sa.String(191), nullable=True))
        batch.add_column(sa.Column("fairness_key", sa.String(191), nullable=True))
        batch.add_column(
            sa.Column("fairness_weight", sa.SmallInteger(), nullable=False, server_default="1")
        )
    op.drop_index("ix_tasks_lease", "tasks")
    op.create_index(
        "ix_tasks_lease", "tasks", ["queue_id", "state", "lease_rank", "available_at", "id"]
    )
    op.create_index(
        "ix_tasks_fair",
        "tasks",
        ["queue_id", "state", "fairness_key", "lease_rank", "available_at", "id"],
    )
    op.create_table(
        "queue_flow",
        sa.Column("queue_id", ident(), sa.ForeignKey("queues.id"), primary_key=True),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.Column("settings", sa.Text(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        **MYSQL_TABLE_ARGS,
    )
    op.create_table(
        "flow_counters",
        sa.Column("queue_id", ident(), sa.ForeignKey("queues.id"), primary_key=True),
        sa.Column("kind", sa.String(8), primary_key=True),
        sa.Column("flow_key", sa.String(191), primary_key=True),
        sa.Column("level", sa.BigInteger(), nullable=False),
        sa.Column("at", UtcDateTime(), nullable=False),
        **MYSQL_TABLE_ARGS,
    )


def downgrade() -> None:
    op.drop_table("flow_counters")
    op.drop_table("queue_flow")
    op.drop_index("ix_tasks_fair", "tasks")
    op.drop_index("ix_tasks_lease", "tasks")
    op.create_index("ix_tasks_lease", "tasks", ["queue_id", "state", "available_at", "id"])
    with op.batch_alter_table("tasks") as batch:
        for column in ("fairness_weight", "fairness_key", "concurrency_key", "lease_rank"):
            batch.drop_column(column)

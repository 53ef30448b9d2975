"""Priority with ageing (docs/orbit/flow-control.md, "Priority and ageing"): tasks gain
`lease_order`, the readiness with a head start per step of priority
(`agentcall.orbit.domain.lease_order`), and the lease indexes order by it instead of by
priority first, so that no priority waits forever. Existing rows get theirs from
`available_at` and `lease_rank`.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

STEP_US = 600_000_000  # agentcall.orbit.domain.lease_order.STEP_US when this was written

# microseconds since the epoch of the naive UTC `available_at`: MySQL/MariaDB keep
# DATETIME(6); SQLite keeps fixed-width text "YYYY-MM-DD HH:MM:SS.ffffff"
EPOCH_US = {
    "mysql": "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', available_at)",
    "sqlite": "CAST(strftime('%s', available_at) AS INTEGER) * 1000000"
    " + CAST(substr(available_at, 21, 6) AS INTEGER)",
}


def upgrade() -> None:
    with op.batch_alter_table("tasks") as batch:
        batch.add_column(
            sa.Column("lease_order", sa.BigInteger(), nullable=False, server_default="0")
        )
    dialect = op.get_bind().dialect.name
    epoch_us = EPOCH_US["sqlite" if dialect == "sqlite" else "mysql"]
    op.execute(f"UPDATE tasks SET lease_order = {epoch_us} + lease_rank * {STEP_US}")
    op.drop_index("ix_tasks_fair", "tasks")
    op.drop_index("ix_tasks_lease", "tasks")
    # the lease query orders by (lease_order, id): both before available_at, so that it reads
    # the index in order (available_at after them only for the readiness read from the index)
    op.create_index(
        "ix_tasks_lease", "tasks", ["queue_id", "state", "lease_order", "id", "available_at"]
    )
    op.create_index(
        "ix_tasks_fair", "tasks", ["queue_id", "state", "fairness_key", "lease_order", "id"]
    )


def downgrade() -> None:
    op.drop_index("ix_tasks_fair", "tasks")
    op.drop_index("ix_tasks_lease", "tasks")
    op.create_index(
        "ix_tasks_lease", "tasks", ["queue_id", "state", "lease_rank", "available_at", "id"]
    )
    op.create_index(
        "ix_tasks_fair",
        "tasks",
        ["queue_id", "state", "fairness_key", "lease_rank", "available_at", "id"],
    )
    with op.batch_alter_table("tasks") as batch:
        batch.drop_column("lease_order")

"""Server processes: one row per running `orbit serve` process (the address where it hears
cross-process wake-up hints, and its heartbeat).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agentcall.orbit.store.types import MYSQL_TABLE_ARGS, UtcDateTime, ident

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "orbit_servers",
        sa.Column("id", ident(), primary_key=True),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("port", sa.Integer(), nullable=False),
        sa.Column("started_at", UtcDateTime(), nullable=False),
        sa.Column("heartbeat_at", UtcDateTime(), nullable=False),
        **MYSQL_TABLE_ARGS,
    )


def downgrade() -> None:
    op.drop_table("orbit_servers")

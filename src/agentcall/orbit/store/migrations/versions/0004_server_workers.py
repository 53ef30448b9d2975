"""Workers connected to each server process: one row per worker connection, written by its
server process's registration round, so that any process lists the namespace's workers of all
processes (agentcall.orbit.domain.worker_directory).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agentcall.orbit.store.types import MYSQL_TABLE_ARGS, UtcDateTime, ident

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "orbit_server_workers",
        sa.Column("connection_id", ident(), primary_key=True),
        sa.Column("server_id", ident(), nullable=False),
        sa.Column("namespace_id", ident(), nullable=False),
        sa.Column("server", sa.String(255), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("instance_id", ident(), nullable=False),
        sa.Column("sdk", sa.String(128), nullable=True),
        sa.Column("host", sa.String(128), nullable=True),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("queues", sa.Text(), nullable=False),
        sa.Column("handlers", sa.Text(), nullable=False),
        sa.Column("slots", sa.Integer(), nullable=False),
        sa.Column("in_flight", sa.Integer(), nullable=False),
        sa.Column("connected_at", UtcDateTime(), nullable=False),
        sa.Column("last_heartbeat_at", UtcDateTime(), nullable=False),
        **MYSQL_TABLE_ARGS,
    )
    op.create_index("ix_orbit_server_workers_namespace", "orbit_server_workers", ["namespace_id"])
    op.create_index("ix_orbit_server_workers_server", "orbit_server_workers", ["server_id"])


def downgrade() -> None:
    op.drop_table("orbit_server_workers")

"""Idle worker slots offered to the other server processes (remote eager dispatch,
agentcall.orbit.domain.offers): one row per offered slot, claimed by a submit's transaction on any
process, delivered and deleted by the offering process.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agentcall.orbit.store.types import MYSQL_TABLE_ARGS, UtcDateTime, ident

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "orbit_worker_offers",
        sa.Column("id", ident(), primary_key=True),
        sa.Column("server_id", ident(), nullable=False),
        sa.Column("connection_id", ident(), nullable=False),
        sa.Column("namespace_id", ident(), nullable=False),
        sa.Column("token_id", ident(), nullable=False),
        sa.Column("worker_name", sa.String(128), nullable=False),
        sa.Column("worker_instance_id", ident(), nullable=False),
        sa.Column("worker_sdk", sa.String(128), nullable=True),
        sa.Column("worker_host", sa.String(128), nullable=True),
        sa.Column("worker_pid", sa.BigInteger(), nullable=True),
        sa.Column("queues", sa.Text(), nullable=False),
        sa.Column("handlers", sa.Text(), nullable=False),
        sa.Column("attempt_id", ident(), nullable=False),
        sa.Column("lease_token_sha256", sa.String(64), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("task_id", ident(), nullable=True),
        sa.Column("claimed_at", UtcDateTime(), nullable=True),
        **MYSQL_TABLE_ARGS,
    )
    op.create_index(
        "ix_orbit_worker_offers_namespace", "orbit_worker_offers", ["namespace_id", "task_id"]
    )
    op.create_index(
        "ix_orbit_worker_offers_server", "orbit_worker_offers", ["server_id", "task_id"]
    )


def downgrade() -> None:
    op.drop_table("orbit_worker_offers")

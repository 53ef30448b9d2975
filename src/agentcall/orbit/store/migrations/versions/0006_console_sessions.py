"""Console sessions (agentcall.orbit.store.sessions): the SHA-256 of a random session id, bound to
the token the operator signed in with, with its last use and its absolute expiry. The browser
holds the session id only; the API token never leaves the server after sign-in.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agentcall.orbit.store.types import MYSQL_TABLE_ARGS, UtcDateTime, ident

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "console_sessions",
        sa.Column("id_sha256", sa.String(64), primary_key=True),
        sa.Column("token_id", ident(), sa.ForeignKey("tokens.id"), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("seen_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        **MYSQL_TABLE_ARGS,
    )
    op.create_index("ix_console_sessions_token", "console_sessions", ["token_id"])
    op.create_index("ix_console_sessions_expires", "console_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_table("console_sessions")

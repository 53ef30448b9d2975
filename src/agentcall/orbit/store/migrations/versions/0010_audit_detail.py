"""Audit log: who, from where and with which request each state-changing action was taken
(docs/orbit/audit.md): the actor's name (a token's label, or the OS user of the admin CLI),
the origin (api, cli, console), the remote address, the target (kind and id: a task, a token,
a queue, a schedule, a bulk operation) and a JSON detail without secrets; tokens get a name.
Indexes serve `GET /v1/audit`'s filters (newest first) and the retention sweep.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

COLUMNS = (
    ("actor_name", sa.String(128)),
    ("origin", sa.String(16)),
    ("remote_addr", sa.String(64)),
    ("target_kind", sa.String(32)),
    ("target_id", sa.String(64)),
    ("detail", sa.Text()),
)
INDEXES = {
    "ix_audit_created": ["created_at"],
    "ix_audit_namespace_action": ["namespace_id", "action", "created_at"],
    "ix_audit_namespace_actor": ["namespace_id", "token_id", "created_at"],
    "ix_audit_namespace_target": ["namespace_id", "target_id", "created_at"],
}


def upgrade() -> None:
    for name, kind in COLUMNS:
        op.add_column("audit_log", sa.Column(name, kind, nullable=True))
    op.add_column("tokens", sa.Column("name", sa.String(128), nullable=True))
    for index, columns in INDEXES.items():
        op.create_index(index, "audit_log", columns)


def downgrade() -> None:
    for index in INDEXES:
        op.drop_index(index, "audit_log")
    op.drop_column("tokens", "name")
    for name, _ in reversed(COLUMNS):
        op.drop_column("audit_log", name)

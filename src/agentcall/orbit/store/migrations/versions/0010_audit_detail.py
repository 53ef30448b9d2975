"""Audit log: who, from where and with which request each state-changing action was taken.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass

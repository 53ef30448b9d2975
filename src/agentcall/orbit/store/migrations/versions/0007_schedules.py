"""Schedules (a recurring task template, its spec and state) and their firings.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass

"""Flow control: task priority, concurrency and fairness keys, queue limits.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass

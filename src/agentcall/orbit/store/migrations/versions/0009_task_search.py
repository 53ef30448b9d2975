"""Task search indexes and tracked bulk operations.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass

"""Trace context: the W3C `traceparent` of a task's submit span, kept with the task while
tracing is on (docs/orbit/tracing.md) so the lease, the attempt and the worker's handler span
continue the submitter's trace. NULL when tracing was off at submit.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("tasks", sa.Column("trace_parent", sa.String(55), nullable=True))


def downgrade() -> None:
    op.drop_column("tasks", "trace_parent")

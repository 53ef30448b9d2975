"""Alembic environment: always run by `agentcall.orbit.store.migrate` with a live connection."""

from __future__ import annotations

from alembic import context

from agentcall.orbit.store.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise SystemExit("run migrations with `orbit migrate --database URL`, not the alembic CLI")

context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()

"""Alembic migrations of the Orbit store (numbered revisions 0001, 0002, ...)."""

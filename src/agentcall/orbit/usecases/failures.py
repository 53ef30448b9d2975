"""Which failures are the database's (unreachable, lost connection, timeout): the edges answer
them UNAVAILABLE (503, or an error ack the worker resends) instead of as a defect."""

from __future__ import annotations

from agentcall.orbit.store.db import is_database_failure

__all__ = ["is_database_failure"]

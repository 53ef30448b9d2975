"""An app factory for `uvicorn --factory` with several worker processes: each process builds
its own database pool and app from the settings that `orbit serve --workers N` exported to
its environment (`orbit.settings.export`)."""

from __future__ import annotations

from agentcall import logs
from agentcall.orbit.api.app import OrbitApp, create_app
from agentcall.orbit.settings import from_environ
from agentcall.orbit.store.db import Database


def from_environment() -> OrbitApp:
    settings = from_environ()
    logs.configure(fmt=settings.log_format, logger="orbit")
    db = Database.open(settings.database_url, pool_size=settings.pool_size)
    return create_app(db, settings)

"""An app factory for `uvicorn --factory` with several worker processes: each process builds
its own database pool from the environment that `orbit serve --workers N` sets."""

from __future__ import annotations

import os

from agentcall.orbit import logs
from agentcall.orbit.api.app import OrbitApp, create_app
from agentcall.orbit.config import ENV_DATABASE, ENV_LOG_FORMAT
from agentcall.orbit.store.db import Database

ENV_POOL = "ORBIT_POOL_SIZE"
ENV_ACCESS_LOG = "ORBIT_ACCESS_LOG"


def from_environment() -> OrbitApp:
    logs.configure(fmt=os.environ.get(ENV_LOG_FORMAT, "auto"))
    db = Database.open(os.environ[ENV_DATABASE], pool_size=int(os.environ.get(ENV_POOL, "20")))
    return create_app(db, access_log=os.environ.get(ENV_ACCESS_LOG, "1") == "1")

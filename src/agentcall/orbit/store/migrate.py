"""Schema migrations with Alembic (numbered revisions `0001`, `0002`, ... in
`migrations/versions`). `upgrade` applies what is missing; `require_current` is what
`orbit serve` checks before it accepts traffic."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from agentcall.orbit.domain.errors import NotMigrated
from agentcall.orbit.store.db import Database

MIGRATIONS = Path(__file__).with_name("migrations")


def _config(connection: sa.Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def head() -> str:
    heads = ScriptDirectory.from_config(_config()).get_heads()
    if len(heads) != 1:
        raise NotMigrated(f"the migration history has {len(heads)} heads; merge them first")
    return heads[0]


async def current(db: Database) -> str | None:
    async with db.engine.connect() as conn:
        return await conn.run_sync(_current_revision)


def _current_revision(sync: sa.Connection) -> str | None:
    return MigrationContext.configure(sync).get_current_revision()


async def upgrade(db: Database) -> tuple[str | None, str]:
    """Apply all missing revisions; return (revision before, revision after)."""
    before = await current(db)
    async with db.engine.begin() as conn:
        await conn.run_sync(lambda sync: command.upgrade(_config(sync), "head"))
    return before, head()


async def require_current(db: Database) -> None:
    found, wanted = await current(db), head()
    if found != wanted:
        state = "has no Orbit schema" if found is None else f"is at revision {found}"
        raise NotMigrated(
            f"the database {state}, this program needs revision {wanted}: "
            "run `orbit migrate --database URL` first"
        )

"""Fresh real databases for the Orbit suites: a SQLite file, or a MariaDB database
`orbit_t_<hex>` created and dropped through the admin URL ORBIT_TEST_MYSQL_URL."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from agentcall.orbit.store.db import Database
from agentcall.orbit.store.migrate import upgrade
from tests.support.services import mysql_url

KINDS = ["sqlite", pytest.param("mariadb", marks=pytest.mark.mariadb)]


def _admin() -> sa.URL:
    return make_url(mysql_url())


async def _mysql_exec(statement: str) -> None:
    db = Database.open(mysql_url(), pool_size=1)
    try:
        async with db.engine.connect() as conn:
            await conn.execute(sa.text(statement))
    finally:
        await db.close()


def mysql_reachable() -> bool:
    try:
        asyncio.run(_mysql_exec("SELECT 1"))
    except Exception:  # noqa: BLE001 - any failure means "not here"
        return False
    return True


@contextlib.contextmanager
def fresh_url(kind: str, tmp: Path, *, migrated: bool) -> Iterator[str]:
    """Yield the URL of a new, empty (or migrated) database; drop it afterwards."""
    if kind == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp / f'orbit-{secrets.token_hex(4)}.db'}"
        if migrated:
            asyncio.run(_migrate(url))
        yield url
        return
    if not mysql_reachable():
        where = _admin().render_as_string()
        pytest.skip(f"MariaDB not reachable at {where}; run scripts/services start")
    name = f"orbit_t_{secrets.token_hex(6)}"
    asyncio.run(_mysql_exec(f"CREATE DATABASE {name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"))
    url = _admin().set(database=name).render_as_string(hide_password=False)
    try:
        if migrated:
            asyncio.run(_migrate(url))
        yield url
    finally:
        asyncio.run(_mysql_exec(f"DROP DATABASE IF EXISTS {name}"))


async def _migrate(url: str) -> None:
    db = Database.open(url)
    try:
        await upgrade(db)
    finally:
        await db.close()

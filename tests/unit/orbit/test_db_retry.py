"""The store's failure policy: transient lock errors retry the whole transaction; any other
driver failure is 503 UNAVAILABLE (the outcome is unknown to the caller)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa

from agentcall.orbit.domain.errors import SetupError, Unavailable
from agentcall.orbit.store.db import Database, Dialect

pytestmark = pytest.mark.unit


def driver_error(message: str) -> sa.exc.OperationalError:
    return sa.exc.OperationalError("COMMIT", {}, sqlite3.OperationalError(message))


async def test_transient_errors_retry_the_transaction(tmp_path: Path) -> None:
    db = Database.open(f"sqlite+aiosqlite:///{tmp_path / 'x.db'}")
    calls = 0

    async def flaky() -> str:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise driver_error("database is locked")
        return "done"

    assert await db.retrying(flaky) == "done" and calls == 3
    await db.close()


@pytest.mark.parametrize("message", ["disk I/O error", "database is locked"])
async def test_other_or_persistent_failures_are_unavailable(tmp_path: Path, message: str) -> None:
    db = Database.open(f"sqlite+aiosqlite:///{tmp_path / 'x.db'}")
    calls = 0

    async def broken() -> None:
        nonlocal calls
        calls += 1
        raise driver_error(message)

    with pytest.raises(Unavailable, match="same key"):
        await db.retrying(broken)
    assert calls == (4 if "locked" in message else 1)
    await db.close()


def test_unsupported_urls_are_refused() -> None:
    with pytest.raises(SetupError, match="sqlite\\+aiosqlite"):
        Database.open("postgresql://localhost/orbit")
    assert Database.open("mysql+asyncmy://u:p@127.0.0.1:1/x").dialect is Dialect.MYSQL

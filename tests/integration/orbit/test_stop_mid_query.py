"""A background loop of the server stops when it is cancelled in the middle of a query.

asyncmy, cancelled while it waits for a result, leaves its connection mid-command; the
rollback SQLAlchemy then runs on it fails with `InterfaceError: Cancelled during execution`,
an ordinary exception raised while the cancellation was being handled. The loops of the
server survive ordinary failures (they log and retry), so without care a loop would survive
its own stop: `orbit serve` would hang at SIGTERM (seen as a test whose server never shut
down). The database's transaction scopes turn a failure that happens while the task is being
cancelled back into the cancellation, and the connection left mid-command is invalidated.
"""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa

from agentcall.orbit.store.db import Database
from agentcall.orbit.store.mysql import driver_of
from tests.support.services import mysql_url

pytestmark = [pytest.mark.integration, pytest.mark.mariadb]


async def _slow_statement(db: Database, started: asyncio.Event) -> None:
    async with db.write() as conn:
        driver = await driver_of(conn)  # the hot path's raw driver statements, as db.now()
        async with driver.cursor() as cursor:
            started.set()
            await cursor.execute("SELECT SLEEP(5)")


async def _survivor(db: Database, started: asyncio.Event, rounds: list[str]) -> None:
    """The shape of every background loop: a failed round is logged and retried."""
    while True:
        try:
            await _slow_statement(db, started)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - what the loops do
            rounds.append(type(exc).__name__)
            await asyncio.sleep(0.05)


async def test_a_loop_cancelled_mid_query_stops_instead_of_retrying() -> None:
    db = Database.open(mysql_url(), pool_size=2)
    started, rounds = asyncio.Event(), []  # type: ignore[var-annotated]
    loop = asyncio.create_task(_survivor(db, started, rounds))
    try:
        await asyncio.wait_for(started.wait(), 10)
        await asyncio.sleep(0.2)  # inside SLEEP(5): the driver waits for the result
        loop.cancel()
        done, _ = await asyncio.wait({loop}, timeout=8)
        assert done, f"the loop survived its cancellation, retrying after {rounds}"
        assert loop.cancelled()
        assert rounds == []
        for _ in range(3):  # the connection left mid-command is never handed out again
            async with db.write() as conn:
                assert (await conn.execute(sa.text("SELECT 1"))).scalar() == 1
    finally:
        if not loop.done():
            loop.cancel()
        await db.close()


async def test_a_failure_outside_a_cancellation_is_still_the_failure() -> None:
    db = Database.open(mysql_url(), pool_size=1)
    try:
        with pytest.raises(ZeroDivisionError):
            async with db.write():
                raise ZeroDivisionError
    finally:
        await db.close()

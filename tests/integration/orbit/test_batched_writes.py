"""The kernel's batched writes (`agentcall.orbit.store.connector.write_all`: on MariaDB several
statements in one round trip) and the batcher's kept lane connection, on SQLite and MariaDB: writes
apply in order, a short UPDATE or a failing statement leaves nothing committed, a lane's session
stays with it between batches."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.execution.batch import Batcher
from agentcall.orbit.store.connector import commit_with, fetch, write_all
from agentcall.orbit.store.db import Database, Dialect
from agentcall.orbit.store.sql import ConcurrentChange, Increment, Insert, Update
from tests.support.orbit_databases import KINDS, fresh_url

pytestmark = pytest.mark.integration
scratch = sa.Table(
    "scratch_writes",
    sa.MetaData(),
    sa.Column("id", sa.String(8), primary_key=True),
    sa.Column("state", sa.String(8), nullable=False),
    sa.Column("n", sa.Integer, nullable=False),
)


@pytest.fixture(params=KINDS)
def writes_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with fresh_url(request.param, tmp_path, migrated=False) as url:
        yield url


@pytest.fixture
async def db(writes_url: str) -> AsyncIterator[Database]:
    database = Database.open(writes_url, pool_size=4)
    async with database.write() as conn:
        await conn.run_sync(scratch.metadata.create_all)
        await conn.execute(
            scratch.insert(),
            [{"id": "a", "state": "OLD", "n": 0}, {"id": "b", "state": "OLD", "n": 0}],
        )
    yield database
    await database.close()


async def _rows(db: Database) -> dict[str, tuple[str, int]]:
    async with db.read() as conn:
        result = await conn.execute(sa.select(scratch).order_by(scratch.c.id))
        return {row.id: (row.state, row.n) for row in result}


async def test_writes_apply_in_order(db: Database) -> None:
    """An insert and then an update of the row it inserted, in one call (one round trip on
    MariaDB): per-row CASE values, conditions and increments as an `Update` states them."""
    async with db.write() as conn:
        await write_all(
            conn,
            [
                Insert(scratch, [{"id": "c", "state": "OLD", "n": 5}]),
                Update(
                    scratch,
                    [{"id": "a", "state": "NEW"}, {"id": "c", "state": "MID"}],
                    where={"state": "OLD"},
                    static={"n": Increment(2)},
                ),
                Update(scratch, [], where={"state": "OLD"}),  # nothing to write: left out
            ],
        )
    assert await _rows(db) == {"a": ("NEW", 2), "b": ("OLD", 0), "c": ("MID", 7)}


async def test_a_short_update_commits_nothing(db: Database) -> None:
    """An UPDATE matching fewer rows than given raises after the round trip; the transaction
    rolls back, so the insert sent with it never commits."""
    with pytest.raises(ConcurrentChange, match="0 of 2 rows"):
        async with db.write() as conn:
            await write_all(
                conn,
                [
                    Insert(scratch, [{"id": "c", "state": "OLD", "n": 0}]),
                    Update(
                        scratch,
                        [{"id": "a"}, {"id": "b"}],
                        where={"state": "OLD"},
                        static={"state": "NEW"},
                    ),
                    Update(
                        scratch,
                        [{"id": "a"}, {"id": "b"}],
                        where={"state": "OLD"},
                        static={"n": Increment()},
                    ),
                ],
            )
            pytest.fail("write_all returned although its last UPDATE matched 0 of 2 rows")
    assert await _rows(db) == {"a": ("OLD", 0), "b": ("OLD", 0)}


async def test_a_short_first_update_is_detected(db: Database) -> None:
    """The check covers every UPDATE of the call, not only the last one."""
    with pytest.raises(ConcurrentChange, match="1 of 2 rows"):
        async with db.write() as conn:
            await write_all(
                conn,
                [
                    Update(scratch, [{"id": "a"}, {"id": "zz"}], where={}, static={"n": 9}),
                    Insert(scratch, [{"id": "c", "state": "OLD", "n": 0}]),
                ],
            )
    assert await _rows(db) == {"a": ("OLD", 0), "b": ("OLD", 0)}


async def test_a_failing_statement_stops_the_rest(db: Database) -> None:
    """A duplicate key in the middle: the error surfaces as SQLAlchemy's (so `is_duplicate`
    and the batcher's retry rules still apply), the statements after it never run and the
    ones before it roll back."""
    with pytest.raises(sa.exc.IntegrityError) as raised:
        async with db.write() as conn:
            await write_all(
                conn,
                [
                    Update(scratch, [{"id": "a"}], where={}, static={"state": "NEW"}),
                    Insert(scratch, [{"id": "b", "state": "DUP", "n": 0}]),
                    Update(scratch, [{"id": "b"}], where={}, static={"state": "NEW"}),
                ],
            )
    assert db.is_duplicate(raised.value)
    assert await _rows(db) == {"a": ("OLD", 0), "b": ("OLD", 0)}


async def test_writes_may_carry_the_commit(db: Database) -> None:
    """`commit_with` on a `hot_write` session: the COMMIT goes with the writes (MariaDB: the
    session is ended, nothing may follow); a failing statement stops the COMMIT too. Elsewhere
    the transaction commits as usual."""
    async with db.hot_write() as conn:
        await commit_with(
            conn,
            [
                Update(scratch, [{"id": "a"}], where={"state": "OLD"}, static={"state": "NEW"}),
                Insert(scratch, [{"id": "c", "state": "NEW", "n": 1}]),
            ],
        )
        if db.dialect is Dialect.MYSQL:
            with pytest.raises(RuntimeError, match="committed with its last writes"):
                await fetch(conn, "now", {})
    with pytest.raises(sa.exc.IntegrityError):
        async with db.hot_write() as conn:
            await commit_with(
                conn,
                [
                    Update(scratch, [{"id": "b"}], where={}, static={"state": "NEW"}),
                    Insert(scratch, [{"id": "c", "state": "DUP", "n": 0}]),
                ],
            )
    assert await _rows(db) == {"a": ("NEW", 0), "b": ("OLD", 0), "c": ("NEW", 1)}


async def _session(conn: AsyncConnection, now: datetime) -> str:
    query = "SELECT CONNECTION_ID()" if conn.dialect.name != "sqlite" else "SELECT 1"
    return str((await conn.execute(sa.text(query))).scalar_one())


async def _fail_after_write(conn: AsyncConnection, now: datetime) -> str:
    await conn.execute(scratch.update().where(scratch.c.id == "a").values(state="LOST"))
    raise RuntimeError("this step fails after writing")


async def test_a_lane_keeps_its_connection_between_batches(db: Database) -> None:
    """MariaDB: consecutive batches of one lane run on the same session, without a pool
    checkout each; a failed transaction is rolled back (its write is gone) and its connection
    goes back to the pool, and the lane goes on with the next batch."""
    if db.dialect is not Dialect.MYSQL:
        pytest.skip("SQLite batches run through db.write() (the single-writer lock)")
    batcher = Batcher(db, lanes=1)
    try:
        first = await batcher.run(_session)
        second = await batcher.run(_session)
        async with db.engine.connect() as other:  # the kept session is not in the pool
            outside = await _session(other, datetime.now())
        with pytest.raises(RuntimeError, match="fails after writing"):
            await batcher.run(_fail_after_write)
        third = await asyncio.wait_for(batcher.run(_session), 5)
        fourth = await batcher.run(_session)
    finally:
        await batcher.stop()
    assert first == second, "the lane took a new connection for its second batch"
    assert outside != first
    assert third == fourth
    assert await _rows(db) == {"a": ("OLD", 0), "b": ("OLD", 0)}

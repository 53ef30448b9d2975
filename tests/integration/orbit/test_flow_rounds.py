"""Lease rounds of a queue with fairness alone, on SQLite and MariaDB
(docs/orbit/flow-control.md, "What it costs"): no lock on the queue's settings row, the heads
read unlocked, then only the rows the choice takes from each key claimed locked; the passes
kept by the serving process and written back to the database."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from agentcall.orbit.domain.flow import VIRTUAL_PASS
from agentcall.orbit.domain.flow_settings import FlowSettings
from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.execution.flow import FlowControl
from agentcall.orbit.store import flow, flow_round
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database, Dialect
from agentcall.orbit.store.tables import tasks
from tests.support.orbit_databases import KINDS, fresh_url
from tests.support.orbit_rows import demo_row

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
WORK = frozenset({HandlerKey("demo.work", "v1")})


@pytest.fixture(params=KINDS)
def rounds_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with fresh_url(request.param, tmp_path, migrated=True) as url:
        yield url


@pytest.fixture
async def db(rounds_db_url: str) -> AsyncIterator[Database]:
    database = Database.open(rounds_db_url, pool_size=4)
    yield database
    await database.close()


async def _fair_queue(db: Database, keys: list[str | None]) -> tuple[str, dict[str, str | None]]:
    """A queue with fairness alone and one task per entry of `keys`, ready one second apart in
    that order; the tasks' fairness keys by id, oldest first."""
    made = await Admin(db).init(f"f-{secrets.token_hex(4)}", "a")
    async with db.write() as conn:
        now = await db.now(conn)
        await flow.save(conn, made.queue_id, 1, FlowSettings(fairness=True), now)
    return made.queue_id, await _add(db, made.namespace_id, made.queue_id, keys, 100)


async def _add(
    db: Database, namespace_id: str, queue_id: str, keys: list[str | None], ago: int
) -> dict[str, str | None]:
    """Tasks of `keys`, the first ready `ago` seconds ago, each next one a second later."""
    async with db.write() as conn:
        now = await db.now(conn)
        rows = [
            demo_row(
                namespace_id,
                queue_id,
                now,
                ready_at=now - timedelta(seconds=ago - n),
                **({} if key is None else {"fairness_key": key}),
            )
            for n, key in enumerate(keys)
        ]
        await conn.execute(tasks.insert(), rows)
    return {row["id"]: row["fairness_key"] for row in rows}


async def test_a_claim_takes_the_first_rows_of_each_key_in_lease_order(db: Database) -> None:
    """`claims` reads the first n ready rows of each fairness key (None: the tasks without
    one), oldest first, and no row of a key it was not asked for."""
    queue_id, keys = await _fair_queue(db, ["A", "A", "B", "A", None, "B", "C"])
    order = list(keys)
    async with db.write() as conn:
        now = await db.now(conn)
        got = await flow_round.claims(conn, queue_id, WORK, now, {"A": 2, "B": 1, None: 1})
    ids = sorted((row.task.id for row in got), key=order.index)
    assert ids == [order[0], order[1], order[2], order[4]]


async def test_a_round_beside_another_skips_only_the_rows_it_claimed(db: Database) -> None:
    """MariaDB: while one lease round of the queue (one slot) is open, holding A's first task,
    another transaction locks the queue's settings row without waiting, and its claim of one
    A task takes A's second (the round holds no other head)."""
    if db.dialect is not Dialect.MYSQL:
        pytest.skip("row locks: MariaDB/MySQL only (SQLite has a single writer)")
    queue_id, keys = await _fair_queue(db, ["A", "A", "B"])
    order = list(keys)
    holding = asyncio.Event()
    done = asyncio.Event()

    async def first() -> list[str]:
        control = FlowControl()
        async with db.write() as conn:
            await control.refresh(conn)
            found = await control.lease(conn, None, queue_id, WORK, 1, set())
            holding.set()
            await done.wait()
            assert found is not None
            return [row.task.id for row in found[1]]

    async def second() -> list[str]:
        await holding.wait()
        try:
            async with db.write() as conn:
                now = await db.now(conn)
                held = await flow.lock(conn, queue_id)  # the settings row is not held
                assert held is not None
                got = await flow_round.claims(conn, queue_id, WORK, now, {"A": 1})
                return [row.task.id for row in got]
        finally:
            done.set()

    mine, theirs = await asyncio.wait_for(asyncio.gather(first(), second()), 20)
    assert (mine, theirs) == ([order[0]], [order[1]])


async def test_fair_rounds_deal_keys_in_turns_and_write_the_passes_back(db: Database) -> None:
    """Rounds of one slot through `FlowControl`: A's backlog, older, is dealt in turns with B
    and C (each key FIFO); the passes are in the database afterwards, and a fresh process (a
    new FlowControl) continues from them: a new key D starts at the queue's virtual time,
    ahead of A's older backlog (with the passes lost, A's oldest task would go first)."""
    queue_id, keys = await _fair_queue(db, ["A"] * 4 + ["B"] * 2 + ["C"] * 2)
    order = list(keys)
    control = FlowControl(refresh_s=0.0)
    leased: list[str] = []
    for _ in range(6):
        async with db.write() as conn:
            await control.refresh(conn)
            assert control.controls(queue_id)
            found = await control.lease(conn, None, queue_id, WORK, 1, set(leased))
            assert found is not None
            rows = found[1]
            await conn.execute(
                sa.update(tasks)
                .where(tasks.c.id.in_([r.task.id for r in rows]))
                .values(state="LEASED")
            )
            leased += [row.task.id for row in rows]
    assert [keys[i] for i in leased] == ["A", "B", "C", "A", "B", "C"]
    assert [i for i in leased if keys[i] == "A"] == order[:2]
    async with db.read() as conn:
        stored = (await flow.state(conn, queue_id)).passes
    assert set(stored) == {"A", "B", "C", VIRTUAL_PASS}
    assert stored["A"] == stored["B"] == stored["C"] > stored[VIRTUAL_PASS] > 0
    async with db.read() as conn:
        namespace_id = (await conn.execute(sa.select(tasks.c.namespace_id).limit(1))).scalar_one()
    keys.update(await _add(db, namespace_id, queue_id, ["D"], 10))
    fresh = FlowControl(refresh_s=0.0)
    async with db.write() as conn:
        await fresh.refresh(conn)
        found = await fresh.lease(conn, None, queue_id, WORK, 1, set(leased))
    assert found is not None and [keys[r.task.id] for r in found[1]] == ["D"]


async def test_fair_key_pages_wrap_round_and_reach_every_key(db: Database) -> None:
    """`fair_keys` reads MAX_FAIR_KEYS keys at a time in key order (the tasks without a key
    first), the next read after the last key read, wrapping round to the first keys: two
    reads of 70 keys and no key give 64 distinct keys each and cover all 71."""
    names: list[str | None] = [f"k{n:02}" for n in range(70)]
    queue_id, _ = await _fair_queue(db, [None, *names])
    async with db.read() as conn:
        first = await flow_round.fair_keys(conn, queue_id)
        second = await flow_round.fair_keys(conn, queue_id, first.after)
    assert first.keys == [None, *names[:63]] and first.after == "k62"
    assert second.keys == [*names[63:], None, *names[:56]] and second.after == "k55"
    assert set(first.keys) | set(second.keys) == {None, *names}


async def test_fairness_reaches_keys_beyond_one_page(db: Database) -> None:
    """70 fairness keys with three tasks each, one-slot rounds through `FlowControl` (a page of
    keys read every round): every key is leased within 80 rounds. Reading only the first 64
    keys, the last 6 would wait until a first key had run all its tasks (129 rounds)."""
    names = [f"k{n:02}" for n in range(70)]
    queue_id, keys = await _fair_queue(db, names * 3)
    control = FlowControl(refresh_s=0.0)
    leased: list[str] = []
    for _ in range(80):
        async with db.write() as conn:
            await control.refresh(conn)
            found = await control.lease(conn, None, queue_id, WORK, 1, set(leased))
            assert found is not None
            ids = [row.task.id for row in found[1]]
            await conn.execute(sa.update(tasks).where(tasks.c.id.in_(ids)).values(state="LEASED"))
            leased += ids
    assert {keys[i] for i in leased} == set(names)

"""The leasing SQL against its pure twin, and the group-commit batcher, on SQLite and MariaDB."""

from __future__ import annotations

import asyncio
import itertools
import json
import secrets
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.leasing import HandlerKey, LeaseCandidate, WorkerOffer, is_eligible
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.strictjson import read_json
from agentcall.orbit.domain.submit import parse_submit, plan_times
from agentcall.orbit.domain.task import new_task
from agentcall.orbit.execution.acks import Peer
from agentcall.orbit.execution.batch import Batcher, Handler, Kind
from agentcall.orbit.execution.kernel import (
    FINISH,
    LEASE,
    START,
    Kernel,
    KernelSettings,
    LeaseAsk,
)
from agentcall.orbit.protocol.messages import AttemptRef, Result, ResultOutcome, WorkerIdentity
from agentcall.orbit.store import execution as store
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.connector import HotConnection
from agentcall.orbit.store.db import Database, Dialect
from agentcall.orbit.store.tables import tasks
from agentcall.orbit.store.tasks import row_task, task_row
from tests.support.orbit_databases import KINDS, fresh_url
from tests.support.orbit_rows import demo_row

pytestmark = pytest.mark.integration
S = timedelta(seconds=1)


@pytest.fixture(params=KINDS)
def kernel_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with fresh_url(request.param, tmp_path, migrated=True) as url:
        yield url


@pytest.fixture
async def db(kernel_db_url: str) -> AsyncIterator[Database]:
    database = Database.open(kernel_db_url, pool_size=4)
    yield database
    await database.close()


def _variants(queue_id: str, other_queue: str, now: datetime) -> Iterator[dict[str, Any]]:
    """Every combination of the columns the eligibility rule looks at."""
    for state, queue, handler, available, deadline, start, count in itertools.product(
        (TaskState.WAITING, TaskState.LEASED, TaskState.FAILED),
        (queue_id, other_queue),
        (("demo.work", "v1"), ("demo.work", "v2"), ("other", "v1")),
        (now - S, now, now + S),
        (now, now + 60 * S),
        (None, now, now + 10 * S),
        (0, 1),
    ):
        yield {
            "state": state.value,
            "queue_id": queue,
            "handler": handler[0],
            "handler_version": handler[1],
            "available_at": available,
            "deadline_at": deadline,
            "start_deadline_at": start,
            "attempt_count": count,
            "retry_max_attempts": 1,
        }


async def test_lease_query_mirrors_the_pure_eligibility_rule(db: Database) -> None:
    """The SQL of the leasing kernel selects exactly the rows `is_eligible` accepts."""
    made = await Admin(db).init(f"k-{secrets.token_hex(4)}", "a")
    other = await Admin(db).create_queue(made.namespace_id, "b")
    body = {
        "queue_id": made.queue_id,
        "handler": "demo.work",
        "handler_version": "v1",
        "payload_version": "v1",
        "payload": {},
    }
    request = parse_submit(read_json(json.dumps(body).encode()))
    async with db.write() as conn:
        now = await db.now(conn)
        template = task_row(
            new_task("0" * 32, made.namespace_id, request, plan_times(request, now), now)
        )
        rows = [
            {**template, **variant, "id": new_id()}
            for variant in _variants(made.queue_id, other, now)
        ]
        await conn.execute(tasks.insert(), rows)
    offer = WorkerOffer(frozenset({made.queue_id}), frozenset({HandlerKey("demo.work", "v1")}))
    async with db.read() as conn:
        found = await store.lease_candidates(conn, made.queue_id, offer.handlers, now, 10_000)
        selected = {row.id for row in found}
        everything = [
            row_task(r)
            for r in await conn.execute(
                sa.select(tasks).where(tasks.c.namespace_id == made.namespace_id)
            )
        ]
    expected = {task.id for task in everything if is_eligible(_candidate(task), offer, now)}
    assert len(everything) == len(rows) and expected  # the table has eligible and other rows
    assert selected == expected
    if db.dialect is Dialect.MYSQL:  # the same query at the clock it reads itself
        async with db.write() as conn:
            clock, clocked = await store.clocked_lease_candidates(
                conn, made.queue_id, offer.handlers, 10_000
            )
        assert {row.id for row in clocked} == expected
        assert clock is not None and now <= clock < now + S


def _candidate(task: Any) -> LeaseCandidate:
    return LeaseCandidate(
        task.state,
        task.queue_id,
        HandlerKey(task.handler, task.handler_version),
        task.available_at,
        task.start_deadline_at,
        task.deadline_at,
        task.attempt_count,
        task.retry.max_attempts,
    )


async def test_batcher_isolates_a_failing_step_and_groups_kinds(db: Database) -> None:
    """One transaction per batch; a failing step is retried alone and fails alone."""
    seen: list[int] = []

    async def many(conn: AsyncConnection, now: datetime, items: list[Any]) -> list[Any]:
        seen.append(len(items))
        return [item * 2 for item in items]

    async def good(conn: AsyncConnection, now: datetime) -> str:
        await conn.execute(sa.text("SELECT 1"))
        return "ok"

    async def bad(conn: AsyncConnection, now: datetime) -> str:
        raise RuntimeError("this step is broken")

    double: Kind[int, int] = Kind("double")
    batcher = Batcher(db, lanes=1, handlers=[Handler(double, many)])
    try:
        grouped = await asyncio.gather(*(batcher.submit(double, n) for n in range(5)))
        mixed = await asyncio.gather(
            batcher.run(good),
            batcher.run(bad),
            batcher.submit(double, 7),
            return_exceptions=True,
        )
    finally:
        await batcher.stop()
    assert grouped == [0, 2, 4, 6, 8] and seen[0] == 5  # one handler call for the five
    assert mixed[0] == "ok" and mixed[2] == 14
    assert isinstance(mixed[1], RuntimeError)


async def test_overlapping_handler_sets_in_one_batch_lease_every_row(db: Database) -> None:
    """Two connections of one queue with overlapping handler sets ask in the same batch: the
    second group's read must look past the rows the first group took (they are locked by this
    same transaction, so SKIP LOCKED returns them), or it comes back short although a row is
    still waiting — and a short fill tells the dispatcher the queue is drained."""
    made = await Admin(db).init(f"k-{secrets.token_hex(4)}", "a")
    async with db.write() as conn:
        now = await db.now(conn)
        rows = [demo_row(made.namespace_id, made.queue_id, now) for _ in range(3)]
        await conn.execute(tasks.insert(), rows)
    work, other = HandlerKey("demo.work", "v1"), HandlerKey("other", "v1")
    worker = WorkerIdentity("w", "i" * 32, None, None, None)

    def ask(handlers: frozenset[HandlerKey]) -> LeaseAsk:
        peer = Peer(new_id(), "t", made.namespace_id, frozenset({made.queue_id}), worker)
        return LeaseAsk(peer, handlers, made.queue_id, 2)

    kernel = Kernel(KernelSettings())
    async with db.write() as conn:
        now = await db.now(conn)
        first, second = await kernel.lease_many(
            conn, now, [ask(frozenset({work})), ask(frozenset({work, other}))]
        )
    leased = [g.task.id for g in first + second]
    assert len(first) == 2 and len(second) == 1, "the third task was left waiting"
    assert sorted(leased) == sorted(row["id"] for row in rows)


async def test_a_lease_round_on_its_own_reads_the_clock_with_its_rows(db: Database) -> None:
    """A batch holding lease asks only runs `Kernel.hot_lease` on MySQL/MariaDB (no clock
    read of its own; a round that finds nothing writes nothing); a batch with other steps,
    and every batch on SQLite, reads the clock first and runs `lease_many`."""
    made = await Admin(db).init(f"k-{secrets.token_hex(4)}", "a")
    body = {
        "queue_id": made.queue_id,
        "handler": "demo.work",
        "handler_version": "v1",
        "payload_version": "v1",
        "payload": {},
    }
    request = parse_submit(read_json(json.dumps(body).encode()))
    worker = WorkerIdentity("w", "i" * 32, None, None, None)
    peer = Peer(new_id(), "t", made.namespace_id, frozenset({made.queue_id}), worker)
    ask = LeaseAsk(peer, frozenset({HandlerKey("demo.work", "v1")}), made.queue_id, 2)
    kernel = Kernel(KernelSettings())
    calls: list[str] = []

    async def clocked(
        conn: HotConnection, now: datetime | None, items: list[Any], last: bool
    ) -> tuple[datetime | None, list[Any]]:
        calls.append("clocked")
        assert now is None and last  # the batch's only kind
        return await kernel.hot_lease(conn, now, items, last)

    async def many(conn: AsyncConnection, now: datetime, items: list[Any]) -> list[Any]:
        calls.append("many")
        return await kernel.lease_many(conn, now, items)

    async def step(conn: AsyncConnection, now: datetime) -> datetime:
        return now

    batcher = Batcher(db, lanes=1, handlers=[Handler(LEASE, many, clocked)])
    try:
        assert await batcher.submit(LEASE, ask) == []  # nothing ready: nothing written
        async with db.write() as conn:
            before = await db.now(conn)
            row = task_row(
                new_task(new_id(), made.namespace_id, request, plan_times(request, before), before)
            )
            await conn.execute(tasks.insert(), [row])
        (grant,) = await batcher.submit(LEASE, ask)
        mixed = await asyncio.gather(batcher.submit(LEASE, ask), batcher.run(step))
    finally:
        await batcher.stop()
    alone = "clocked" if db.dialect is Dialect.MYSQL else "many"
    assert calls == [alone, alone, "many"]
    assert grant.task.id == row["id"] and before <= grant.leased_at < before + S
    assert mixed[0] == []  # the only task is leased already
    async with db.read() as conn:
        state = (
            await conn.execute(
                sa.select(tasks.c.state, tasks.c.revision).where(tasks.c.id == row["id"])
            )
        ).one()
    assert (state.state, state.revision) == (TaskState.LEASED.value, 2)


async def test_starts_and_results_of_one_batch_share_one_hot_transaction(db: Database) -> None:
    """On MySQL/MariaDB a batch of starts and results (no other step) runs on one `hot_write`
    session: the first kind's locking read reads the clock, the next kind gets that clock,
    and only the last one's writes may carry the COMMIT; every message is answered as on its
    own. SQLite (and any batch with a step) runs `start_many` / `finish_many` after a clock
    read."""
    made = await Admin(db).init(f"k-{secrets.token_hex(4)}", "a")
    async with db.write() as conn:
        now = await db.now(conn)
        rows = [demo_row(made.namespace_id, made.queue_id, now) for _ in range(2)]
        await conn.execute(tasks.insert(), rows)
    worker = WorkerIdentity("w", "i" * 32, None, None, None)
    peer = Peer(new_id(), "t", made.namespace_id, frozenset({made.queue_id}), worker)
    kernel = Kernel(KernelSettings())
    calls: list[tuple[str, bool, bool]] = []  # (kind, clock given, last)

    def watched(name: str, hot: Any) -> Any:
        async def run(
            conn: HotConnection, now: datetime | None, items: list[Any], last: bool
        ) -> tuple[datetime | None, list[Any]]:
            calls.append((name, now is not None, last))
            return await hot(conn, now, items, last)

        return run

    batcher = Batcher(
        db,
        lanes=1,
        handlers=[
            Handler(LEASE, kernel.lease_many, kernel.hot_lease),
            Handler(START, kernel.start_many, watched("start", kernel.hot_start)),
            Handler(FINISH, kernel.finish_many, watched("finish", kernel.hot_finish)),
        ],
    )
    try:
        ask = LeaseAsk(peer, frozenset({HandlerKey("demo.work", "v1")}), made.queue_id, 2)
        first, second = await batcher.submit(LEASE, ask)
        refs = [AttemptRef(g.attempt_id, g.lease_token) for g in (first, second)]
        assert (await batcher.submit(START, (peer, refs[1]))).ok
        calls.clear()
        result = Result("m1", refs[1], ResultOutcome.SUCCEEDED, '{"ok":true}', None, ())
        started, finished = await asyncio.gather(
            batcher.submit(START, (peer, refs[0])), batcher.submit(FINISH, (peer, result))
        )
    finally:
        await batcher.stop()
    assert started.ok and started.fields["task_state"] == "RUNNING"
    assert finished.ok and finished.fields["task_state"] == "SUCCEEDED"
    if db.dialect is Dialect.MYSQL:
        assert calls == [("start", False, False), ("finish", True, True)]
    else:
        assert calls == []
    async with db.read() as conn:
        states = {
            r.id: (r.state, r.revision)
            for r in await conn.execute(sa.select(tasks.c.id, tasks.c.state, tasks.c.revision))
        }
    assert states[first.task.id] == (TaskState.RUNNING.value, 3)
    assert states[second.task.id] == (TaskState.SUCCEEDED.value, 4)

"""8 worker processes × 1,000 tasks on SQLite and MariaDB: every task ends with exactly one
SUCCEEDED attempt and no attempt ever ran twice (leasing kernel, O-STATE-1)."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.strictjson import read_json
from agentcall.orbit.domain.submit import parse_submit, plan_times
from agentcall.orbit.domain.task import new_task
from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.tables import task_attempts, task_events, tasks
from agentcall.orbit.store.tasks import task_row
from tests.support.orbit_databases import KINDS, fresh_url
from tests.support.orbit_server import execution_server
from tests.support.orbit_workers import WorkerProcess, workers

pytestmark = pytest.mark.integration
TASKS, WORKERS, CONCURRENCY = 1000, 8, 8


@pytest.fixture(params=KINDS)
def scale_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with fresh_url(request.param, tmp_path, migrated=True) as url:
        yield url


async def insert_tasks(db: Database, namespace_id: str, queue_id: str, count: int) -> None:
    """Accepted tasks written straight through the store (the submit path has its own suite)."""
    body = {
        "queue_id": queue_id,
        "handler": "demo.noop",
        "handler_version": "v1",
        "payload_version": "v1",
        "payload": {"n": 1},
        "recovery_safety": "IDEMPOTENT",
        "retry": {"max_attempts": 3},
    }
    request = parse_submit(read_json(json.dumps(body).encode()))
    for start in range(0, count, 250):
        async with db.write() as conn:
            now = await db.now(conn)
            times = plan_times(request, now)
            rows = [
                task_row(new_task(new_id(), namespace_id, request, times, now))
                for _ in range(start, min(count, start + 250))
            ]
            await conn.execute(tasks.insert(), rows)
            events = [
                {
                    "id": new_id(),
                    "task_id": row["id"],
                    "revision": 1,
                    "kind": "ACCEPTED",
                    "from_state": None,
                    "to_state": "WAITING",
                    "detail": None,
                    "created_at": now,
                }
                for row in rows
            ]
            await conn.execute(task_events.insert(), events)


async def test_eight_workers_thousand_tasks_each_runs_exactly_once(
    scale_db_url: str, tmp_path: Path
) -> None:
    db = Database.open(scale_db_url, pool_size=4)
    try:
        made = await Admin(db).init(f"scale-{secrets.token_hex(4)}", "bulk")
        issued = await Admin(db).create_token(
            made.namespace_id, [Permission.WORK], [made.queue_id], None
        )
        # a lease long enough that a busy 2-core machine never lets one lapse by accident
        with execution_server(
            scale_db_url, tmp_path / "server.log", ORBIT_LEASE_TTL_MS="20000"
        ) as url:
            procs = [
                WorkerProcess(
                    url,
                    issued.token,
                    [made.queue_id],
                    tmp_path / f"w{i}.log",
                    concurrency=CONCURRENCY,
                    name=f"w{i}",
                )
                for i in range(WORKERS)
            ]
            with workers(*procs):
                for proc in procs:
                    await proc.connected()
                await insert_tasks(db, made.namespace_id, made.queue_id, TASKS)
                await _wait_all_done(db, made.queue_id)
        await _check(db, made.queue_id)
    finally:
        await db.close()


async def _wait_all_done(db: Database, queue_id: str) -> None:
    query = sa.select(sa.func.count()).where(
        tasks.c.queue_id == queue_id, tasks.c.state == "SUCCEEDED"
    )
    for _ in range(1200):
        async with db.read() as conn:
            if (await conn.execute(query)).scalar_one() == TASKS:
                return
        await asyncio.sleep(0.1)
    raise AssertionError("not every task SUCCEEDED within 120 s")


async def _check(db: Database, queue_id: str) -> None:
    async with db.read() as conn:
        states = Counter(
            (
                await conn.execute(sa.select(tasks.c.state).where(tasks.c.queue_id == queue_id))
            ).scalars()
        )
        rows = (
            await conn.execute(
                sa.select(
                    task_attempts.c.task_id,
                    task_attempts.c.state,
                    task_attempts.c.started_at,
                    task_attempts.c.worker_name,
                ).where(task_attempts.c.queue_id == queue_id)
            )
        ).all()
        revisions = Counter(
            (
                await conn.execute(sa.select(tasks.c.revision).where(tasks.c.queue_id == queue_id))
            ).scalars()
        )
    assert states == Counter({"SUCCEEDED": TASKS})
    succeeded = Counter(row.task_id for row in rows if row.state == "SUCCEEDED")
    started = Counter(row.task_id for row in rows if row.started_at is not None)
    assert len(succeeded) == TASKS and set(succeeded.values()) == {1}
    assert set(started.values()) == {1}, "an attempt ran twice"
    assert len(rows) == TASKS, "a lease was lost although every worker stayed up"
    assert revisions == Counter({4: TASKS})  # ACCEPTED, LEASED, STARTED, SUCCEEDED
    busy = Counter(row.worker_name for row in rows)
    assert len(busy) == WORKERS, f"work was not spread over every worker: {busy}"

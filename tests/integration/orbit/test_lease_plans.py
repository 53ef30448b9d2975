"""The lease statements read their index in order (docs/orbit/flow-control.md, "What it
costs"): the queue's WAITING range of ix_tasks_lease in lease order, a fairness key's range of
ix_tasks_fair, never a scan of the table nor a sort of the rows found; on SQLite and MariaDB,
over a table that holds several queues and states."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

import pytest

from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.connector import fetch
from agentcall.orbit.store.db import Database, Dialect
from agentcall.orbit.store.flow_round import _heads_query
from agentcall.orbit.store.sql import QUERIES
from agentcall.orbit.store.tables import tasks
from tests.support.orbit_rows import demo_row

pytestmark = [pytest.mark.integration]
STATES = ["WAITING", "LEASED", "SUCCEEDED", "FAILED"]


async def _seed(db: Database) -> str:
    """Four queues of 400 tasks in every state, priorities and fairness keys mixed."""
    queues = []
    made = await Admin(db).init(f"p-{secrets.token_hex(4)}", "q0")
    queues.append(made.queue_id)
    for n in range(1, 4):
        queues.append(await Admin(db).create_queue(made.namespace_id, f"q{n}"))
    async with db.write() as conn:
        now = await db.now(conn)
        rows = [
            {
                **demo_row(
                    made.namespace_id,
                    queues[n % 4],
                    now,
                    ready_at=now - timedelta(seconds=n),
                    priority=1 + n % 9,
                    fairness_key=f"tenant-{n % 7}",
                ),
                "state": STATES[(n // 4) % 4],
            }
            for n in range(1600)
        ]
        await conn.execute(tasks.insert(), rows)
    if db.dialect is Dialect.MYSQL:
        async with db.write() as conn:
            await conn.exec_driver_sql("ANALYZE TABLE tasks")
    return queues[0]


def _params(queue_id: str, now: Any) -> dict[str, Any]:
    return {
        "queue_id": queue_id,
        "waiting": "WAITING",
        "now": now,
        "handlers": [("demo.work", "v1")],
        "limit": 8,
        "blocked": [""],
        "fair_0": "tenant-3",
        "limit_0": 8,
    }


@pytest.mark.parametrize(
    ("query", "index"),
    [
        ("lease_candidates", "ix_tasks_lease"),
        ("flow_candidates", "ix_tasks_lease"),
        (_heads_query(1, False, True), "ix_tasks_fair"),
    ],
)
async def test_lease_statements_read_their_index_in_order(
    db: Database, query: str, index: str
) -> None:
    queue_id = await _seed(db)
    explain = "EXPLAIN QUERY PLAN " if db.dialect is Dialect.SQLITE else "EXPLAIN "
    name = f"explain_{query}"
    QUERIES[name] = explain + QUERIES[query]
    async with db.write() as conn:
        now = await db.now(conn)
        plan = await fetch(conn, name, _params(queue_id, now))
    if db.dialect is Dialect.SQLITE:
        steps = [str(row[-1]) for row in plan]
        assert any(f"USING INDEX {index} (" in step for step in steps), steps
        assert not any(step.startswith("SCAN tasks") for step in steps), steps
        assert not any("TEMP B-TREE" in step for step in steps), steps
    else:
        tables = [row for row in plan if row.table and "tasks" in row.table]
        assert [row.key for row in tables] == [index], plan
        assert all("filesort" not in (row.Extra or "") for row in plan), plan

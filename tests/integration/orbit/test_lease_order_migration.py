"""The migration to priority with ageing (docs/orbit/flow-control.md, "Priority and ageing")
gives every existing task the lease order its readiness and priority make
(`agentcall.orbit.domain.lease_order`), to the microsecond, on SQLite and MariaDB alike; and
the tasks then lease in that order."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa
from alembic import command

from agentcall.orbit.domain.flow_settings import MAX_PRIORITY
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.lease_order import AGEING_STEP, rank_order
from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.execution import lease_candidates
from agentcall.orbit.store.migrate import _config, upgrade
from agentcall.orbit.store.tables import tasks
from tests.support.orbit_rows import demo_row

pytestmark = [pytest.mark.integration]

# (priority, readiness in seconds before now): with a 10-minute step the lease order is the
# p5 that waited 4.5 steps (its head start is 4), the p9, the p1 that waited just past its
# 8 steps, the fresh p5, the fresh p1; the odd microseconds check the conversion of times
SEEDED = [(5, 60.000_001), (9, 30.5), (1, 8 * 600 + 1), (5, 4.5 * 600), (1, 0.000_003)]


async def test_existing_tasks_get_their_lease_order_and_lease_in_it(empty_db_url: str) -> None:
    db = Database.open(empty_db_url)
    try:
        async with db.engine.begin() as conn:
            await conn.run_sync(lambda sync: command.upgrade(_config(sync), "0012"))
        made = await Admin(db).init(f"m-{new_id()[:8]}", "default")
        ids = await _seed(db, made.namespace_id, made.queue_id)
        assert await upgrade(db) == ("0012", "0013")
        async with db.read() as conn:
            rows = (
                await conn.execute(
                    sa.select(
                        tasks.c.id, tasks.c.available_at, tasks.c.lease_rank, tasks.c.lease_order
                    )
                )
            ).all()
        assert {r.id: r.lease_order for r in rows} == {
            r.id: rank_order(r.available_at, r.lease_rank) for r in rows
        }
        async with db.write() as conn:
            now = await db.now(conn)
            found = await lease_candidates(
                conn, made.queue_id, [HandlerKey("demo.work", "v1")], now, 10
            )
        assert [row.id for row in found] == [ids[3], ids[1], ids[2], ids[0], ids[4]]
    finally:
        await db.close()


async def _seed(db: Database, namespace_id: str, queue_id: str) -> list[str]:
    """The SEEDED tasks as the schema before lease_order holds them."""
    assert AGEING_STEP == timedelta(minutes=10)
    async with db.write() as conn:
        now = await db.now(conn)
        rows = []
        for priority, ago in SEEDED:
            ready = now - timedelta(seconds=ago)
            row = demo_row(namespace_id, queue_id, now, ready_at=ready, priority=priority)
            del row["lease_order"]
            assert row["lease_rank"] == MAX_PRIORITY - priority
            rows.append(row)
        await conn.execute(tasks.insert(), rows)
    return [row["id"] for row in rows]

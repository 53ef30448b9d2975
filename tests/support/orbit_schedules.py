"""Schedules written straight through the store for the firing suites and the benchmark: an
interval schedule of a tenant's queue with a `demo.*` handler, and reads of its firing
records and of the tasks its slots submitted."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from agentcall.orbit.domain.canonical import digest
from agentcall.orbit.domain.idempotency import Scope
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.jsonvalue import dumps
from agentcall.orbit.domain.schedule_records import FiringRow, ScheduleRow
from agentcall.orbit.domain.strictjson import read_json
from agentcall.orbit.domain.submit import parse_submit, submit_document
from agentcall.orbit.domain.times import format_time
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.schedule_ports import CREATE_OPERATION
from agentcall.orbit.store.schedules import SqlSchedules, firing_row, schedule_values
from agentcall.orbit.store.tables import schedule_firings, schedules, tasks


@dataclass(frozen=True)
class Made:
    id: str
    anchor_at: datetime


def template_text(queue_id: str, handler: str = "demo.noop", **payload: Any) -> str:
    body = {
        "queue_id": queue_id,
        "handler": handler,
        "handler_version": "v1",
        "payload_version": "v1",
        "payload": payload,
    }
    return dumps(submit_document(parse_submit(read_json(json.dumps(body).encode()))))


def whole_second(at: datetime) -> datetime:
    return at.replace(microsecond=0)


async def create_interval(
    db: Database,
    namespace_id: str,
    queue_id: str,
    interval_ms: int,
    anchor_at: datetime,
    template: str,
    **fields: Any,
) -> Made:
    """An active interval schedule whose first slot is `anchor_at`."""
    store = SqlSchedules(db)
    schedule_id = new_id()
    spec = {"interval_ms": interval_ms, "anchor_at": format_time(anchor_at)}

    def build(now: datetime) -> tuple[ScheduleRow, str]:
        values: dict[str, Any] = {
            "id": schedule_id,
            "namespace_id": namespace_id,
            "queue_id": queue_id,
            "revision": 1,
            "state": "active",
            "note": None,
            "template_text": template,
            "spec_text": json.dumps(spec),
            "start_at": None,
            "end_at": None,
            "jitter_ms": 0,
            "catchup_window_ms": 300_000,
            "overlap": "allow",
            "next_fire_at": anchor_at,
            "created_at": now,
            "updated_at": now,
            **fields,
        }
        return ScheduleRow(**values), "{}"

    scope = Scope(namespace_id, CREATE_OPERATION, "", new_id())
    await store.create(scope, digest(CREATE_OPERATION, {"id": schedule_id}), build)
    return Made(schedule_id, anchor_at)


async def create_many(
    db: Database,
    namespace_id: str,
    queue_id: str,
    count: int,
    interval_ms: int,
    anchor_at: datetime,
    template: str,
    **fields: Any,
) -> list[str]:
    """`count` active interval schedules like `create_interval`'s, inserted in one
    transaction (no create keys); their ids."""
    spec = json.dumps({"interval_ms": interval_ms, "anchor_at": format_time(anchor_at)})
    async with db.write() as conn:
        now = await db.now(conn)
        rows = [
            schedule_values(
                ScheduleRow(
                    **{
                        "id": new_id(),
                        "namespace_id": namespace_id,
                        "queue_id": queue_id,
                        "revision": 1,
                        "state": "active",
                        "note": None,
                        "template_text": template,
                        "spec_text": spec,
                        "start_at": None,
                        "end_at": None,
                        "jitter_ms": 0,
                        "catchup_window_ms": 300_000,
                        "overlap": "allow",
                        "next_fire_at": anchor_at,
                        "created_at": now,
                        "updated_at": now,
                        **fields,
                    }
                )
            )
            for _ in range(count)
        ]
        await conn.execute(schedules.insert(), rows)
    return [row["id"] for row in rows]


async def firings_of(db: Database, schedule_ids: list[str]) -> list[FiringRow]:
    """Every firing record of the schedules, by nominal time."""
    f = schedule_firings.c
    query = sa.select(schedule_firings).where(f.schedule_id.in_(schedule_ids))
    async with db.read() as conn:
        rows = [firing_row(row) for row in await conn.execute(query.order_by(f.nominal_at))]
    return rows


async def tasks_of_queue(db: Database, queue_id: str) -> dict[str, dict[str, Any]]:
    """The queue's tasks by id: state, created_at, completed_at."""
    t = tasks.c
    query = sa.select(t.id, t.state, t.created_at, t.completed_at).where(t.queue_id == queue_id)
    async with db.read() as conn:
        return {row.id: dict(row._mapping) for row in await conn.execute(query)}


async def clear_schedules(db: Database, schedule_ids: list[str]) -> None:
    """Pause the schedules (nothing fires after the test)."""
    async with db.write() as conn:
        query = schedules.update().where(schedules.c.id.in_(schedule_ids))
        await conn.execute(query.values(state="paused", next_fire_at=None))


def now_utc() -> datetime:
    return datetime.now(UTC)


SECOND = timedelta(seconds=1)

"""Flow control in the database (docs/orbit/flow-control.md): a queue's settings (queue_flow,
revisioned) and what the API, the console and the metrics read of a flow-controlled queue
(running tasks per concurrency key, token buckets, fairness passes, waiting tasks per key).
Named queries of `flow.sql`, inside the caller's transaction. A lease round's reads and
writes are `agentcall.orbit.store.flow_round`; the decision itself is
`agentcall.orbit.domain.flow.choose`."""

from __future__ import annotations

from datetime import datetime

from agentcall.orbit.domain.errors import StateConflict
from agentcall.orbit.domain.flow import QUEUE_BUCKET, Bucket, FlowState
from agentcall.orbit.domain.flow_settings import (
    NO_FLOW,
    FlowSettings,
    QueueFlow,
    parse_settings,
    settings_view,
)
from agentcall.orbit.domain.jsonvalue import dumps
from agentcall.orbit.domain.strictjson import read_json_text
from agentcall.orbit.store.connector import HotConnection, execute, fetch, write_all
from agentcall.orbit.store.flow_round import BUCKET, LIVE, MILLI, WAITING, running
from agentcall.orbit.store.sql import Insert
from agentcall.orbit.store.tables import queue_flow


def _flow(queue_id: str, revision: int, text: str) -> QueueFlow:
    return QueueFlow(queue_id, revision, parse_settings(read_json_text(text)))


async def all_settings(conn: HotConnection) -> dict[str, QueueFlow]:
    """Every queue's stored settings (a queue without a row has none)."""
    rows = await fetch(conn, "flow_settings_all", {})
    return {row.queue_id: _flow(row.queue_id, row.revision, row.settings) for row in rows}


async def lock(conn: HotConnection, queue_id: str) -> QueueFlow | None:
    """The queue's settings, its row locked until the transaction ends (None: no settings)."""
    rows = await fetch(conn, "flow_lock", {"queue_id": queue_id})
    return _flow(queue_id, rows[0].revision, rows[0].settings) if rows else None


async def read(conn: HotConnection, queue_id: str) -> QueueFlow:
    """The queue's settings, unlocked (revision 1 and no rule: never set)."""
    rows = await fetch(conn, "flow_get", {"queue_id": queue_id})
    if not rows:
        return QueueFlow(queue_id, 1, NO_FLOW)
    return _flow(queue_id, rows[0].revision, rows[0].settings)


async def key_state(
    conn: HotConnection, queue_id: str, settings: FlowSettings, key: str | None
) -> tuple[int, Bucket | None]:
    """What holds one task of the queue: its key's running tasks, its rate bucket."""
    count = 0
    if key is not None and settings.limit_for(key) is not None:
        params = {"queue_id": queue_id, "live": LIVE, "key": key}
        count = (await fetch(conn, "flow_running_key", params))[0].running
    if settings.rate is None:
        return count, None
    name = key if settings.rate.per_key and key is not None else QUEUE_BUCKET
    params = {"queue_id": queue_id, "kind": BUCKET, "key": name}
    rows = await fetch(conn, "flow_bucket", params)
    return count, (Bucket(rows[0].level / MILLI, rows[0].counted_at) if rows else None)


async def save(
    conn: HotConnection, queue_id: str, expected: int, settings: FlowSettings, now: datetime
) -> QueueFlow:
    """Replace the queue's settings if their revision is `expected` (1 before any change);
    else StateConflict."""
    text = dumps(settings_view(settings))
    current = await lock(conn, queue_id)
    revision = 1 if current is None else current.revision
    if revision != expected:
        raise StateConflict(f"the queue's flow settings are at revision {revision}; GET first")
    if current is None:
        row = {"queue_id": queue_id, "revision": 2, "settings": text, "updated_at": now}
        await write_all(conn, [Insert(queue_flow, [row])])
    else:
        params = {"queue_id": queue_id, "expected": expected, "settings": text, "now": now}
        if await execute(conn, "flow_update_settings", params) != 1:
            raise StateConflict("the queue's flow settings changed meanwhile; GET first")
    return QueueFlow(queue_id, expected + 1, settings)


async def state(conn: HotConnection, queue_id: str) -> FlowState:
    """Running tasks per concurrency key, the buckets and the fairness passes of the queue."""
    by_key = await running(conn, queue_id)
    buckets: dict[str, Bucket] = {}
    passes: dict[str, int] = {}
    for row in await fetch(conn, "flow_counters", {"queue_id": queue_id}):
        if row.kind == BUCKET:
            buckets[row.flow_key] = Bucket(row.level / MILLI, row.counted_at)
        else:
            passes[row.flow_key] = row.level
    return FlowState(by_key, buckets, passes)


async def waiting_by_key(
    conn: HotConnection, queue_id: str, now: datetime
) -> dict[str | None, int]:
    """Ready WAITING tasks of the queue per concurrency key (None: without a key)."""
    rows = await fetch(
        conn, "flow_waiting_keys", {"queue_id": queue_id, "waiting": WAITING, "now": now}
    )
    return {row.concurrency_key: row.waiting for row in rows}

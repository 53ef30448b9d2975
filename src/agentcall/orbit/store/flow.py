"""Flow control in the database (docs/orbit/flow-control.md): a queue's settings (queue_flow,
revisioned), what the lease choice of a flow-controlled queue reads (its candidates, running
tasks per concurrency key, token buckets and fairness passes) and what it writes back. Named
queries of `flow.sql`, inside the caller's transaction. The decision itself is
`agentcall.orbit.domain.flow.choose`."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from agentcall.orbit.domain.errors import StateConflict
from agentcall.orbit.domain.flow import QUEUE_BUCKET, Bucket, FlowState, LeaseChoice
from agentcall.orbit.domain.flow_settings import (
    NO_FLOW,
    FlowSettings,
    QueueFlow,
    parse_settings,
    settings_view,
)
from agentcall.orbit.domain.jsonvalue import dumps
from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.strictjson import read_json_text
from agentcall.orbit.store.connector import HotConnection, execute, fetch, write_all
from agentcall.orbit.store.ports import Leasable
from agentcall.orbit.store.sql import Insert
from agentcall.orbit.store.tables import flow_counters, queue_flow
from agentcall.orbit.store.tasks import row_task

BUCKET, PASS = "bucket", "pass"
MILLI = 1000  # bucket levels are kept in milli-tokens
MAX_FAIR_KEYS = 64  # fairness keys dealt per lease round (the rest wait for the next)
NO_KEY = [""]  # `NOT IN (:blocked)` with nothing blocked (a concurrency key is never "")
_LIVE = [TaskState.LEASED.value, TaskState.RUNNING.value]
_WAITING = TaskState.WAITING.value


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
    running = 0
    if key is not None and settings.limit_for(key) is not None:
        params = {"queue_id": queue_id, "live": _LIVE, "key": key}
        running = (await fetch(conn, "flow_running_key", params))[0].running
    if settings.rate is None:
        return running, None
    name = key if settings.rate.per_key and key is not None else QUEUE_BUCKET
    params = {"queue_id": queue_id, "kind": BUCKET, "key": name}
    rows = await fetch(conn, "flow_bucket", params)
    return running, (Bucket(rows[0].level / MILLI, rows[0].at) if rows else None)


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
    running = await fetch(conn, "flow_running", {"queue_id": queue_id, "live": _LIVE})
    buckets: dict[str, Bucket] = {}
    passes: dict[str, int] = {}
    for row in await fetch(conn, "flow_counters", {"queue_id": queue_id}):
        if row.kind == BUCKET:
            buckets[row.flow_key] = Bucket(row.level / MILLI, row.at)
        else:
            passes[row.flow_key] = row.level
    return FlowState({r.concurrency_key: r.running for r in running}, buckets, passes)


async def candidates(
    conn: HotConnection,
    queue_id: str,
    handlers: Iterable[HandlerKey],
    now: datetime,
    limit: int,
    *,
    blocked: Iterable[str],
    fair: bool,
) -> list[Leasable]:
    """Ready WAITING rows in lease order, without the concurrency keys at their limit, locked:
    up to `limit` of the queue, or (`fair`) up to `limit` per fairness key."""
    params: dict[str, Any] = {
        "queue_id": queue_id,
        "waiting": _WAITING,
        "now": now,
        "handlers": [(h.handler, h.handler_version) for h in sorted(handlers)],
        "limit": limit,
        "blocked": sorted(blocked) or NO_KEY,
    }
    if not fair:
        rows = await fetch(conn, "flow_candidates", params)
    else:
        keys = await fetch(
            conn,
            "flow_fair_keys",
            {"queue_id": queue_id, "waiting": _WAITING, "limit": MAX_FAIR_KEYS},
        )
        rows = []
        for key in (row.fairness_key for row in keys):
            if key is None:
                rows += await fetch(conn, "flow_unkeyed_candidates", params)
            else:
                rows += await fetch(conn, "flow_fair_candidates", {**params, "fairness_key": key})
    return [Leasable(row_task(row), row.lease_count) for row in rows]


async def write_back(
    conn: HotConnection, queue_id: str, choice: LeaseChoice, now: datetime
) -> None:
    """The buckets and passes the choice used, as they are after it."""
    rows = [
        {
            "queue_id": queue_id,
            "kind": BUCKET,
            "flow_key": key,
            "level": round(b.tokens * MILLI),
            "at": b.refilled_at,
        }
        for key, b in choice.buckets.items()
    ] + [
        {"queue_id": queue_id, "kind": PASS, "flow_key": key, "level": level, "at": now}
        for key, level in choice.passes.items()
    ]
    if not rows:
        return
    for kind, keys in ((BUCKET, list(choice.buckets)), (PASS, list(choice.passes))):
        if keys:
            params = {"queue_id": queue_id, "kind": kind, "keys": keys}
            await execute(conn, "flow_drop_counters", params)
    await write_all(conn, [Insert(flow_counters, rows)])


async def waiting_by_key(
    conn: HotConnection, queue_id: str, now: datetime
) -> dict[str | None, int]:
    """Ready WAITING tasks of the queue per concurrency key (None: without a key)."""
    rows = await fetch(
        conn, "flow_waiting_keys", {"queue_id": queue_id, "waiting": _WAITING, "now": now}
    )
    return {row.concurrency_key: row.waiting for row in rows}

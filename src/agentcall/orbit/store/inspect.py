"""Read-only queries behind the inspection API, the console, the metrics and the readiness
check: per-state counts (one grouped query), the oldest WAITING task per queue, when the
WAITING tasks of each queue become available and how many only later, completions
per minute, which of some tasks have settled, a task's events, a filtered keyset page,
queue names and tokens. None of them takes a lock or runs on the submit or lease paths."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.cursor import Position
from agentcall.orbit.domain.search import TaskFilter
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.store import search
from agentcall.orbit.store.tables import (
    queues,
    task_attempt_evidence,
    task_attempts,
    task_events,
    tasks,
    token_queues,
    tokens,
)

c = tasks.c
SETTLED = [
    TaskState.SUCCEEDED.value,
    TaskState.FAILED.value,
    TaskState.CANCELLED.value,
    TaskState.NEEDS_REVIEW.value,
]
FINISHED = [TaskState.SUCCEEDED.value, TaskState.FAILED.value, TaskState.CANCELLED.value]


async def queue_names(conn: AsyncConnection, queue_ids: Sequence[str]) -> dict[str, str]:
    query = sa.select(queues.c.id, queues.c.name).where(queues.c.id.in_(list(queue_ids)))
    return {row.id: row.name for row in await conn.execute(query)}


async def all_queues(conn: AsyncConnection) -> dict[str, str]:
    return {row.id: row.name for row in await conn.execute(sa.select(queues.c.id, queues.c.name))}


async def state_counts(
    conn: AsyncConnection,
) -> tuple[dict[str, dict[str, int]], dict[str, datetime]]:
    """{queue_id: {state: count}} of every queue and the creation time of each queue's oldest
    WAITING task, in one grouped query: the (queue_id, state, created_at, id) index answers
    both without reading rows."""
    oldest = sa.func.min(c.created_at).label("oldest")
    query = sa.select(c.queue_id, c.state, sa.func.count(), oldest).group_by(c.queue_id, c.state)
    counts: dict[str, dict[str, int]] = {}
    waiting: dict[str, datetime] = {}
    for queue_id, state, count, first in await conn.execute(query):
        counts.setdefault(queue_id, {})[state] = int(count)
        if state == TaskState.WAITING.value and first is not None:
            waiting[queue_id] = first  # min() keeps the column type: aware UTC
    return counts, waiting


@dataclass(frozen=True, slots=True)
class Availability:
    """A queue's WAITING tasks as leasing sees them: the earliest `available_at` among them
    (ready when it is not after now) and how many are available only after now."""

    first_available_at: datetime
    scheduled: int


async def availability(
    conn: AsyncConnection, queue_ids: Sequence[str], now: datetime
) -> dict[str, Availability]:
    """{queue_id: Availability} of the queues with WAITING tasks, in one grouped query over
    the leasing index (queue_id, state, lease_order, id, available_at): one range of WAITING
    entries per queue, no row read."""
    if not queue_ids:
        return {}
    later = sa.func.sum(sa.case((c.available_at > now, 1), else_=0))
    query = (
        sa.select(c.queue_id, sa.func.min(c.available_at), later)
        .where(c.queue_id.in_(list(queue_ids)), c.state == TaskState.WAITING.value)
        .group_by(c.queue_id)
    )
    return {
        queue_id: Availability(first, int(scheduled or 0))
        for queue_id, first, scheduled in await conn.execute(query)
        if first is not None
    }


async def completions(
    conn: AsyncConnection, queue_ids: Sequence[str], since: datetime, created_since: datetime
) -> list[tuple[str, str, int]]:
    """(minute 'YYYY-MM-DD HH:MM', state, count) of tasks that finished since `since`, among
    those created since `created_since` (the bound keeps the scan on the state index)."""
    minute = sa.func.substr(sa.cast(c.completed_at, sa.String), 1, 16).label("minute")
    query = (
        sa.select(minute, c.state, sa.func.count())
        .where(
            c.queue_id.in_(list(queue_ids)),
            c.state.in_(FINISHED),
            c.created_at >= created_since,
            c.completed_at >= since,
        )
        .group_by(minute, c.state)
    )
    return [(str(m), str(s), int(n)) for m, s, n in await conn.execute(query)]


async def settled_among(conn: AsyncConnection, task_ids: Sequence[str]) -> set[str]:
    """Which of `task_ids` are SUCCEEDED, FAILED, CANCELLED or NEEDS_REVIEW (primary key)."""
    query = sa.select(c.id).where(c.id.in_(list(task_ids)), c.state.in_(SETTLED))
    return set((await conn.execute(query)).scalars())


async def events(conn: AsyncConnection, task_id: str, limit: int = 200) -> list[Any]:
    e = task_events.c
    query = (
        sa.select(e.revision, e.kind, e.from_state, e.to_state, e.detail, e.created_at)
        .where(e.task_id == task_id)
        .order_by(e.revision)
        .limit(limit)
    )
    return list((await conn.execute(query)).all())


async def page(
    conn: AsyncConnection, where: TaskFilter, after: Position | None, limit: int
) -> list[Any]:
    """Summary rows with their error code, matching the search filter `where`, newest first,
    strictly after `after` (keyset on created_at, id; the search's indexes serve it)."""
    terms = search.conditions(where)
    if after is not None:
        terms.append(search.after_position(after))
    query = (
        sa.select(
            c.id,
            c.state,
            c.revision,
            c.handler,
            c.handler_version,
            c.business_key,
            c.attempt_count,
            c.created_at,
            c.updated_at,
            c.error_code,
        )
        .where(*terms)
        .order_by(c.created_at.desc(), c.id.desc())
        .limit(limit)
    )
    return list((await conn.execute(query)).all())


async def token_rows(conn: AsyncConnection, namespace_id: str | None) -> list[dict[str, Any]]:
    """Every token (of one namespace, or all) with its permissions and queues, never a
    secret or its hash."""
    t = tokens.c
    query = sa.select(
        t.id, t.namespace_id, t.permissions, t.expires_at, t.revoked_at, t.created_at
    ).order_by(t.created_at, t.id)
    if namespace_id is not None:
        query = query.where(t.namespace_id == namespace_id)
    rows = [dict(row._mapping) for row in await conn.execute(query)]
    scopes: dict[str, list[str]] = {}
    pairs = sa.select(token_queues.c.token_id, token_queues.c.queue_id)
    for token_id, queue_id in await conn.execute(pairs):
        scopes.setdefault(token_id, []).append(queue_id)
    for row in rows:
        row["queue_ids"] = sorted(scopes.get(row["id"], []))
        row["permissions"] = row["permissions"].split()
    return rows


async def attempts_of(conn: AsyncConnection, task_id: str, limit: int = 100) -> list[Any]:
    a = task_attempts.c
    query = sa.select(task_attempts).where(a.task_id == task_id).order_by(a.number).limit(limit)
    return list((await conn.execute(query)).all())


async def evidence_of(conn: AsyncConnection, task_id: str, limit: int = 500) -> list[Any]:
    ev = task_attempt_evidence.c
    query = (
        sa.select(task_attempt_evidence)
        .where(ev.task_id == task_id)
        .order_by(ev.attempt_id, ev.seq)
        .limit(limit)
    )
    return list((await conn.execute(query)).all())

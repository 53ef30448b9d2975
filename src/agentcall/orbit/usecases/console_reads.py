"""The console's reads, each in one short read transaction, with the same visibility rules as
the API (a task outside the token's namespace or queues is "not found")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from agentcall.orbit.domain.cursor import Position
from agentcall.orbit.domain.search import TaskFilter
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.tokens import Principal
from agentcall.orbit.store import inspect
from agentcall.orbit.store.tasks import visible_task
from agentcall.orbit.usecases.operations import Operations

Filter = TaskFilter  # what a queue page shows: the API's search filter
PAGE = 25
REVIEW_PAGE = 50


@dataclass(frozen=True, slots=True)
class TaskDetail:
    task: Task
    attempts: list[dict[str, Any]]
    events: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class QueuePage:
    rows: list[Any]
    next_position: Position | None


async def completions(
    ops: Operations, principal: Principal, now: datetime
) -> list[tuple[str, str, int]]:
    """The token's queues' completions of the hour up to `now`, by minute (`store.inspect`)."""
    since = now - timedelta(minutes=59, seconds=now.second, microseconds=now.microsecond)
    queue_ids = sorted(principal.queue_ids)

    db = ops.db

    async def once() -> list[tuple[str, str, int]]:
        async with db.single_read() as conn:
            # tasks that waited and ran for up to a day before finishing are counted
            return await inspect.completions(conn, queue_ids, since, now - timedelta(days=1))

    return await db.retrying(once) if queue_ids else []


async def queue_page(
    ops: Operations, where: TaskFilter, after: Position | None, limit: int = PAGE
) -> QueuePage:
    db = ops.db

    async def once() -> list[Any]:
        async with db.single_read() as conn:
            return await inspect.page(conn, where, after, limit + 1)

    rows = await db.retrying(once)
    if len(rows) <= limit:
        return QueuePage(rows, None)
    last = rows[limit - 1]
    position = Position(where.queue_id, where.state, last.created_at, last.id, where.digest())
    return QueuePage(rows[:limit], position)


async def review_inbox(ops: Operations, principal: Principal, names: dict[str, str]) -> list[Any]:
    """NEEDS_REVIEW tasks of the token's queues, newest first (up to REVIEW_PAGE a queue)."""
    found: list[Any] = []
    for queue_id in sorted(principal.queue_ids):
        where = TaskFilter(queue_id, TaskState.NEEDS_REVIEW)
        page = await queue_page(ops, where, None, REVIEW_PAGE)
        found.extend((names.get(queue_id, queue_id), row) for row in page.rows)
    return sorted(found, key=lambda pair: pair[1].created_at, reverse=True)


async def task_detail(ops: Operations, principal: Principal, task_id: str) -> TaskDetail:
    db = ops.db

    async def once() -> TaskDetail:
        async with db.read() as conn:
            task = await visible_task(conn, principal, task_id)
            attempts = await inspect.attempts_of(conn, task_id)
            evidence = await inspect.evidence_of(conn, task_id)
            events = await inspect.events(conn, task_id)
        by_attempt: dict[str, list[dict[str, Any]]] = {}
        for item in evidence:
            by_attempt.setdefault(item.attempt_id, []).append(dict(item._mapping))
        views = [{**row._mapping, "evidence": by_attempt.get(row.id, [])} for row in attempts]
        return TaskDetail(task, views, [dict(row._mapping) for row in events])

    return await db.retrying(once)

"""Task rows: insert, load, conditional cancel, keyset page."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.cursor import Position
from agentcall.orbit.domain.errors import NotFound
from agentcall.orbit.domain.flow_settings import (
    DEFAULT_PRIORITY,
    DEFAULT_TASK_FLOW,
    DEFAULT_WEIGHT,
    MAX_PRIORITY,
    TaskFlow,
)
from agentcall.orbit.domain.lease_order import lease_order
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.submit import RecoverySafety, RetryPolicy
from agentcall.orbit.domain.task import Task, TaskSummary
from agentcall.orbit.domain.tokens import Principal
from agentcall.orbit.store.connector import write_all
from agentcall.orbit.store.sql import Insert
from agentcall.orbit.store.tables import tasks

c = tasks.c


def task_row(task: Task) -> dict[str, Any]:
    return {
        "id": task.id,
        "namespace_id": task.namespace_id,
        "queue_id": task.queue_id,
        "state": task.state.value,
        "revision": task.revision,
        "handler": task.handler,
        "handler_version": task.handler_version,
        "payload_version": task.payload_version,
        "payload": task.payload_text,
        "business_key": task.business_key,
        "available_at": task.available_at,
        "start_deadline_at": task.start_deadline_at,
        "deadline_at": task.deadline_at,
        "task_timeout_ms": task.task_timeout_ms,
        "recovery_safety": task.recovery_safety.value,
        "retry_max_attempts": task.retry.max_attempts,
        "retry_initial_delay_ms": task.retry.initial_delay_ms,
        "retry_max_delay_ms": task.retry.max_delay_ms,
        "retry_attempt_timeout_ms": task.retry.attempt_timeout_ms,
        "attempt_count": task.attempt_count,
        "result": task.result_text,
        "cancel_requested_at": task.cancel_requested_at,
        "completed_at": task.completed_at,
        "created_at": task.created_at,
        "updated_at": task.updated_at,
        "trace_parent": task.trace_parent,
        "lease_rank": MAX_PRIORITY - task.flow.priority,
        "lease_order": lease_order(task.available_at, task.flow.priority),
        "concurrency_key": task.flow.concurrency_key,
        "fairness_key": task.flow.fairness_key,
        "fairness_weight": task.flow.fairness_weight,
    }


def row_task(row: sa.Row[Any]) -> Task:
    return Task(
        id=row.id,
        namespace_id=row.namespace_id,
        queue_id=row.queue_id,
        state=TaskState(row.state),
        revision=row.revision,
        handler=row.handler,
        handler_version=row.handler_version,
        payload_version=row.payload_version,
        payload_text=row.payload,
        business_key=row.business_key,
        available_at=row.available_at,
        start_deadline_at=row.start_deadline_at,
        deadline_at=row.deadline_at,
        task_timeout_ms=row.task_timeout_ms,
        recovery_safety=RecoverySafety(row.recovery_safety),
        retry=RetryPolicy(
            row.retry_max_attempts,
            row.retry_initial_delay_ms,
            row.retry_max_delay_ms,
            row.retry_attempt_timeout_ms,
        ),
        attempt_count=row.attempt_count,
        result_text=row.result,
        cancel_requested_at=row.cancel_requested_at,
        completed_at=row.completed_at,
        created_at=row.created_at,
        updated_at=row.updated_at,
        error_code=getattr(row, "error_code", None),
        error_message=getattr(row, "error_message", None),
        attempt_error_text=getattr(row, "attempt_error", None),
        current_attempt_id=getattr(row, "current_attempt_id", None),
        trace_parent=getattr(row, "trace_parent", None),
        flow=row_flow(row),
    )


def row_flow(row: sa.Row[Any]) -> TaskFlow:
    """The flow fields of a task row (the shared default when none is set)."""
    priority = MAX_PRIORITY - getattr(row, "lease_rank", MAX_PRIORITY - DEFAULT_PRIORITY)
    concurrency_key = getattr(row, "concurrency_key", None)
    fairness_key = getattr(row, "fairness_key", None)
    weight = getattr(row, "fairness_weight", DEFAULT_WEIGHT)
    if (priority, concurrency_key, fairness_key, weight) == (DEFAULT_PRIORITY, None, None, 1):
        return DEFAULT_TASK_FLOW
    return TaskFlow(priority, concurrency_key, fairness_key, weight)


# statements are built once: constructing them per call costs more than executing them
_LOAD = sa.select(tasks).where(c.id == sa.bindparam("task_id"))


async def insert_task(conn: AsyncConnection, task: Task) -> None:
    await write_all(conn, [Insert(tasks, [task_row(task)])])


def new_task_rows(many: Sequence[Task]) -> Insert:
    """New tasks as one INSERT (`connector.insert_all`)."""
    return Insert(tasks, [task_row(task) for task in many])


async def load_task(conn: AsyncConnection, task_id: str) -> Task | None:
    row = (await conn.execute(_LOAD, {"task_id": task_id})).first()
    return None if row is None else row_task(row)


async def cancel_if(conn: AsyncConnection, task: Task, now: datetime) -> bool:
    """Conditional update to the cancelled `task`: exactly one concurrent caller wins."""
    result = await conn.execute(
        tasks.update()
        .where(
            c.id == task.id,
            c.state == TaskState.WAITING.value,
            c.revision == task.revision - 1,
        )
        .values(
            state=task.state.value,
            revision=task.revision,
            cancel_requested_at=now,
            completed_at=now,
            updated_at=now,
        )
    )
    return result.rowcount == 1


_SUMMARY_COLUMNS = (
    c.id,
    c.queue_id,
    c.state,
    c.revision,
    c.handler,
    c.handler_version,
    c.business_key,
    c.available_at,
    c.start_deadline_at,
    c.deadline_at,
    c.attempt_count,
    c.cancel_requested_at,
    c.completed_at,
    c.created_at,
    c.updated_at,
)


async def page(
    conn: AsyncConnection,
    queue_id: str,
    state: TaskState | None,
    after: Position | None,
    limit: int,
) -> list[TaskSummary]:
    """Up to `limit` summaries in (created_at DESC, id DESC) order strictly after `after`."""
    query = sa.select(*_SUMMARY_COLUMNS).where(c.queue_id == queue_id)
    if state is not None:
        query = query.where(c.state == state.value)
    if after is not None:
        query = query.where(
            sa.or_(
                c.created_at < after.created_at,
                sa.and_(c.created_at == after.created_at, c.id < after.task_id),
            )
        )
    query = query.order_by(c.created_at.desc(), c.id.desc()).limit(limit)
    return [summary_of(r) for r in (await conn.execute(query)).all()]


def summary_query() -> sa.Select[Any]:
    """The SELECT of the list's summary columns (a search adds its conditions)."""
    return sa.select(*_SUMMARY_COLUMNS)


def summary_of(r: Any) -> TaskSummary:
    """A summary from a row of `summary_query()`'s columns."""
    return TaskSummary(
        r.id,
        r.queue_id,
        TaskState(r.state),
        r.revision,
        r.handler,
        r.handler_version,
        r.business_key,
        r.available_at,
        r.start_deadline_at,
        r.deadline_at,
        r.attempt_count,
        r.cancel_requested_at,
        r.completed_at,
        r.created_at,
        r.updated_at,
    )


async def visible_task(conn: AsyncConnection, principal: Principal, task_id: str) -> Task:
    task = await load_task(conn, task_id)
    if task is None:
        raise NotFound("task not found")
    principal.require_visible(task.namespace_id, task.queue_id)
    return task

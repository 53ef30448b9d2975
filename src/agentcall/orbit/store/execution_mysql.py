"""The MySQL/MariaDB twins of the kernel's hot reads in `orbit.store.execution` (lease
candidates, attempts locked with their task) and its event/attempt inserts, as plain SQL on the
driver connection (`orbit.store.driver`). Same rows, same locks, same order."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.store import driver
from agentcall.orbit.store.tables import tasks

TASK_NAMES = driver.columns_of(tasks)
_TASK_SELECT = "SELECT " + ", ".join(TASK_NAMES) + " FROM tasks"
_LEASABLE = (
    _TASK_SELECT + " WHERE queue_id = %s AND state = %s AND available_at <= %s"
    " AND deadline_at > %s AND (start_deadline_at IS NULL OR start_deadline_at > %s)"
    " AND attempt_count < retry_max_attempts AND (handler, handler_version) IN ({pairs})"
    " ORDER BY available_at, id LIMIT %s FOR UPDATE SKIP LOCKED"
)
ATTEMPT_COLUMNS = (
    "a.id", "a.task_id", "a.namespace_id", "a.queue_id", "a.number", "a.state",
    "a.lease_token_sha256", "a.connection_id", "a.lease_expires_at", "a.attempt_deadline_at",
    "a.started_at", "a.end_reason", "a.end_digest", "a.evidence_count",
    "t.state AS task_state", "t.revision AS task_revision",
    "t.cancel_requested_at AS task_cancel_requested_at", "t.recovery_safety",
    "t.retry_max_attempts", "t.retry_initial_delay_ms", "t.retry_max_delay_ms",
    "t.retry_attempt_timeout_ms", "t.attempt_count", "t.deadline_at", "t.start_deadline_at",
)  # fmt: skip
ATTEMPT_NAMES = driver.names_of(ATTEMPT_COLUMNS)
_ATTEMPTS = (
    "SELECT " + ", ".join(ATTEMPT_COLUMNS) + " FROM task_attempts a"
    " JOIN tasks t ON t.id = a.task_id WHERE a.id IN ({ids}) FOR UPDATE"
)


async def leasable(
    conn: AsyncConnection, queue_id: str, handlers: Iterable[HandlerKey], now: datetime,
    limit: int,
) -> list[Any]:  # fmt: skip
    """WAITING tasks of the queue ready to lease, oldest-ready first, locked (SKIP LOCKED)."""
    pairs = sorted(handlers)
    sql = _LEASABLE.format(pairs=", ".join(["(%s, %s)"] * len(pairs)))
    values: list[Any] = [queue_id, TaskState.WAITING.value, now, now, now]
    values.extend(item for h in pairs for item in (h.handler, h.handler_version))
    values.append(limit)
    return await driver.fetch(conn, sql, values, TASK_NAMES)


async def attempts(conn: AsyncConnection, attempt_ids: Sequence[str]) -> list[Any]:
    """Attempt rows with their task's facts, locked (FOR UPDATE)."""
    if not attempt_ids:
        return []
    sql = _ATTEMPTS.format(ids=", ".join(["%s"] * len(attempt_ids)))
    return await driver.fetch(conn, sql, list(attempt_ids), ATTEMPT_NAMES)

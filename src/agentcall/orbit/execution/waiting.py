"""WAITING tasks that can no longer start: FAILED with START_DEADLINE_EXCEEDED or
DEADLINE_EXCEEDED (worker-protocol.md §4, sweeper step 3)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.leasing import waiting_expiry
from agentcall.orbit.domain.states import TaskState, check_transition
from agentcall.orbit.execution.transitions import ERROR_MESSAGES
from agentcall.orbit.store import execution as store


async def expire_waiting(conn: AsyncConnection, now: datetime, limit: int) -> int:
    failed = 0
    for row in await store.expired_waiting(conn, now, limit):
        code = waiting_expiry(now, row.start_deadline_at, row.deadline_at)
        if code is None:
            continue
        check_transition(TaskState.WAITING, TaskState.FAILED)
        values = {
            "state": TaskState.FAILED.value,
            "updated_at": now,
            "completed_at": now,
            "error_code": code.value,
            "error_message": ERROR_MESSAGES[code],
        }
        if not await store.update_task(conn, row.id, TaskState.WAITING, row.revision, values):
            continue
        detail = f'{{"reason":"{code.value}","error_code":"{code.value}"}}'
        event = store.event_row(
            row.id,
            row.revision + 1,
            "FAILED",
            TaskState.WAITING,
            TaskState.FAILED,
            detail,
            now,
            new_id(),
        )
        await store.insert_events(conn, [event])
        failed += 1
    return failed

"""POST /v1/tasks/{id}:cancel in every cancellable state (O-CAN-1,
docs/orbit/task-control.md §3), one transaction each:

- WAITING: CANCELLED at once;
- LEASED: the unstarted attempt ends CANCELLED and so does the task; the worker's late
  `started` then fails the fence (LEASE_LOST), so the handler never runs;
- RUNNING: `cancel_requested_at` is recorded (revision + 1); the worker is told after the
  commit, and its confirmation, result or silence decides the end (`decide_end`).

A live attempt is locked together with its task by the same statement the worker results use
(`store.load_attempts`), so a cancel and a result are serialised: exactly one commits first and
the other sees its effect.
"""

from __future__ import annotations

from datetime import datetime
from functools import partial

from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.attempts import AttemptState
from agentcall.orbit.domain.cancel import (
    OPERATION,
    CancelMode,
    CancelRequest,
    apply_cancel,
    cancel_digest,
    plan_cancel,
)
from agentcall.orbit.domain.errors import StateConflict
from agentcall.orbit.domain.idempotency import Scope
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.domain.transitions import (
    LiveAttempt,
    cancel_requested_row,
    cancelled_lease_rows,
)
from agentcall.orbit.store import execution as store
from agentcall.orbit.store import journal, tasks
from agentcall.orbit.store.db import Database
from agentcall.orbit.usecases.task_writes import Change, TaskWrite, Written, write_task

_EVENT = {
    CancelMode.NOW: "CANCELLED",
    CancelMode.END_LEASE: "CANCELLED",
    CancelMode.REQUEST: "CANCEL_REQUESTED",
}


async def cancel_task(
    db: Database,
    principal: Principal,
    task_id: str,
    request: CancelRequest,
    key: str,
    request_id: str,
) -> Written:
    principal.require(Permission.CANCEL)
    scope = Scope(principal.namespace_id, OPERATION, task_id, key)
    write = TaskWrite(principal, task_id, scope, cancel_digest(request), OPERATION, request_id)
    return await write_task(db, write, partial(_plan, request))


async def _plan(request: CancelRequest, conn: AsyncConnection, task: Task, now: datetime) -> Change:
    live = None
    if task.state in (TaskState.LEASED, TaskState.RUNNING) and task.current_attempt_id:
        found = await store.load_attempts(conn, [task.current_attempt_id])
        live = found.get(task.current_attempt_id)
        task = await _reload(conn, task)  # as of the lock
    requested = task.cancel_requested_at is not None
    plan = plan_cancel(task.state, task.revision, request, requested=requested)
    done = apply_cancel(task, plan, now)
    detail: dict[str, JsonValue] = {
        "reason": request.reason,
        "expected_revision": str(task.revision),
    }
    if plan.mode is CancelMode.NOW:
        return Change(done, partial(_cancel_waiting, task, done, now, detail))
    if live is None or live.id != task.current_attempt_id or not live.state.live:
        raise StateConflict("the task's attempt changed concurrently; GET it and decide again")
    detail["attempt_id"] = live.id
    writes = partial(_cancel_live, task, done, live, plan.mode, now, detail)
    return Change(done, writes, tell_worker=live.id)


async def _reload(conn: AsyncConnection, task: Task) -> Task:
    fresh = await tasks.load_task(conn, task.id)
    assert fresh is not None  # tasks are never deleted
    return fresh


async def _cancel_waiting(
    task: Task, done: Task, now: datetime, detail: dict[str, JsonValue], conn: AsyncConnection
) -> None:
    if not await tasks.cancel_if(conn, done, now):
        raise StateConflict("the task changed concurrently; GET it and decide again")
    await journal.append_event(conn, done, "CANCELLED", task.state, now, detail)


async def _cancel_live(
    task: Task,
    done: Task,
    live: LiveAttempt,
    mode: CancelMode,
    now: datetime,
    detail: dict[str, JsonValue],
    conn: AsyncConnection,
) -> None:
    values = cancel_requested_row(now)
    if mode is CancelMode.END_LEASE:
        attempt, task_values = cancelled_lease_rows(done, now)
        if not await store.update_attempt(conn, live.id, AttemptState.LEASED, attempt):
            raise StateConflict("the attempt started concurrently; GET the task and decide again")
        values.update(task_values)
    if not await store.update_task(conn, task.id, task.state, task.revision, values):
        raise StateConflict("the task changed concurrently; GET it and decide again")
    await journal.append_event(conn, done, _EVENT[mode], task.state, now, detail)

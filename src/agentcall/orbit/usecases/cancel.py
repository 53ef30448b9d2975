"""POST /v1/tasks/{id}:cancel in every cancellable state (O-CAN-1,
docs/orbit/task-control.md §3), one transaction each:

- WAITING: CANCELLED at once;
- LEASED: the unstarted attempt ends CANCELLED and so does the task; the worker's late
  `started` then fails the fence (LEASE_LOST), so the handler never runs;
- RUNNING: `cancel_requested_at` is recorded (revision + 1); the worker is told after the
  commit, and its confirmation, result or silence decides the end (`decide_end`).

A live attempt is locked together with its task by the same statement the worker results use
(`OperatorTransaction.load_attempts`), so a cancel and a result are serialised: exactly one
commits first and the other sees its effect.
"""

from __future__ import annotations

from datetime import datetime
from functools import partial

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
from agentcall.orbit.domain.transitions import OperatorMove
from agentcall.orbit.store.ports import OperatorTransaction, TaskStore
from agentcall.orbit.usecases.task_writes import Change, TaskWrite, Written, write_task

_MOVE = {
    CancelMode.NOW: OperatorMove.CANCEL_WAITING,
    CancelMode.END_LEASE: OperatorMove.CANCEL_LEASE,
    CancelMode.REQUEST: OperatorMove.REQUEST_CANCEL,
}


async def cancel_task(
    store: TaskStore,
    principal: Principal,
    task_id: str,
    request: CancelRequest,
    key: str,
    request_id: str,
) -> Written:
    principal.require(Permission.CANCEL)
    scope = Scope(principal.namespace_id, OPERATION, task_id, key)
    write = TaskWrite(principal, task_id, scope, cancel_digest(request), OPERATION, request_id)
    return await write_task(store, write, partial(_plan, request))


async def _plan(
    request: CancelRequest, tx: OperatorTransaction, task: Task, now: datetime
) -> Change:
    live = None
    if task.state in (TaskState.LEASED, TaskState.RUNNING) and task.current_attempt_id:
        found = await tx.load_attempts([task.current_attempt_id])
        live = found.get(task.current_attempt_id)
        task = await _reload(tx, task)  # as of the lock
    requested = task.cancel_requested_at is not None
    plan = plan_cancel(task.state, task.revision, request, requested=requested)
    done = apply_cancel(task, plan, now)
    detail: dict[str, JsonValue] = {
        "reason": request.reason,
        "expected_revision": str(task.revision),
    }
    move = _MOVE[plan.mode]
    if plan.mode is CancelMode.NOW:
        return Change(move, task, done, detail)
    if live is None or live.id != task.current_attempt_id or not live.state.live:
        raise StateConflict("the task's attempt changed concurrently; GET it and decide again")
    detail["attempt_id"] = live.id
    return Change(move, task, done, detail, live, tell_worker=live.id)


async def _reload(tx: OperatorTransaction, task: Task) -> Task:
    fresh = await tx.load_task(task.id)
    assert fresh is not None  # tasks are never deleted
    return fresh

"""Cancel (O-CAN-1) over the in-memory twin: `agentcall.orbit.usecases.cancel` and
`agentcall.orbit.usecases.task_writes` written over `MemoryWrites`, the operator-write
statements the typed port does not have yet. The same decisions (`plan_cancel`,
`apply_cancel`) and the same receipt rules (`check_replay`) as the SQL path."""

from __future__ import annotations

from datetime import datetime

from agentcall.orbit.domain.attempts import AttemptState, EndReason
from agentcall.orbit.domain.cancel import (
    OPERATION,
    CancelMode,
    CancelRequest,
    apply_cancel,
    cancel_digest,
    plan_cancel,
)
from agentcall.orbit.domain.errors import NotFound, StateConflict
from agentcall.orbit.domain.idempotency import Scope, StoredReceipt, check_replay
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.jsonvalue import JsonValue, dumps
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.task import Task, task_view
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store.memory import MemoryStore, MemoryWrites, audit_row
from agentcall.orbit.store.memory_state import Row
from agentcall.orbit.store.sql import ConcurrentChange
from agentcall.orbit.usecases.task_writes import Written

_EVENT = {
    CancelMode.NOW: "CANCELLED",
    CancelMode.END_LEASE: "CANCELLED",
    CancelMode.REQUEST: "CANCEL_REQUESTED",
}


async def cancel_on_twin(
    store: MemoryStore, principal: Principal, task_id: str, request: CancelRequest, key: str
) -> Written:
    principal.require(Permission.CANCEL)
    scope = Scope(principal.namespace_id, OPERATION, task_id, key)
    digest = cancel_digest(request)
    async with store.transaction() as (tx, now):
        task = tx.state.tasks.get(task_id)  # as this transaction sees it
        if task is None:
            raise NotFound("task not found")
        principal.require_visible(task.namespace_id, task.queue_id)
        stored = await tx.find_receipt(scope)
        if stored is not None:
            return Written(200, True, check_replay(stored, digest).receipt_text)
        done, mode, attempt_id = await _plan(tx, task, request, now)
        receipt = StoredReceipt(digest, 200, dumps(task_view(done)))
        await tx.insert_receipt(scope, task.id, receipt, now)
        await tx.append_audit(audit_row(principal.token_id, OPERATION, done, "r", now))
    tell = attempt_id if mode is not CancelMode.NOW else None
    return Written(200, False, receipt.receipt_text, tell)


async def _plan(
    tx: MemoryWrites, task: Task, request: CancelRequest, now: datetime
) -> tuple[Task, CancelMode, str | None]:
    requested = task.cancel_requested_at is not None
    plan = plan_cancel(task.state, task.revision, request, requested=requested)
    done = apply_cancel(task, plan, now)
    detail: dict[str, JsonValue] = {
        "reason": request.reason,
        "expected_revision": str(task.revision),
    }
    values: Row = {"cancel_requested_at": now, "updated_at": now}
    live = None
    if plan.mode is not CancelMode.NOW:
        attempt_id = task.current_attempt_id or ""
        live = (await tx.load_attempts([attempt_id])).get(attempt_id)
        if live is None or not live.state.live:
            raise StateConflict("the task's attempt changed concurrently; GET it and decide again")
        detail["attempt_id"] = live.id
    if plan.mode is CancelMode.END_LEASE and live is not None:
        ended: Row = {
            "state": AttemptState.CANCELLED.value,
            "ended_at": now,
            "end_reason": EndReason.CANCELLED.value,
            "end_digest": EndReason.CANCELLED.value,
            "task_state_after": done.state.value,
            "task_revision_after": done.revision,
        }
        try:
            tx.state.move_attempt(live.id, AttemptState.LEASED, ended)
        except ConcurrentChange:
            raise StateConflict(
                "the attempt started concurrently; GET the task and decide again"
            ) from None
    if plan.mode is not CancelMode.REQUEST:
        values.update(state=done.state.value, completed_at=now, current_attempt_id=None)
    if not await tx.update_task(task.id, task.state, task.revision, values):
        raise StateConflict("the task changed concurrently; GET it and decide again")
    await tx.append_event(_event(done, _EVENT[plan.mode], task.state, now, detail))
    return done, plan.mode, None if live is None else live.id


def _event(
    task: Task, kind: str, from_state: TaskState, now: datetime, detail: dict[str, JsonValue]
) -> Row:
    return {
        "id": new_id(),
        "task_id": task.id,
        "revision": task.revision,
        "kind": kind,
        "from_state": from_state.value,
        "to_state": task.state.value,
        "detail": dumps(detail),
        "created_at": now,
    }

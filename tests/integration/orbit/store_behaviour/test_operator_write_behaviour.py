"""`TaskStore.operator_write` and its one writer on every store: an `OperatorWrite` decided on
a task or attempt that moved since it was read raises `ConcurrentChange`, and the whole
transaction rolls back: no receipt (the key stays free), no task or attempt change, no event
(O-SUB-4, O-CAN-1, O-NOTE-6)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import pytest

from agentcall.orbit.domain.cancel import OPERATION, CancelRequest, cancel_digest
from agentcall.orbit.domain.idempotency import Scope, StoredReceipt
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.tokens import Principal
from agentcall.orbit.store.ports import (
    ConcurrentChange,
    LiveAttempt,
    OperatorMove,
    OperatorTransaction,
    OperatorWrite,
)
from tests.integration.orbit.store_behaviour.backends import (
    Backend,
    new_key,
    ref_of,
    result_of,
    submitted,
    worker_peer,
)

pytestmark = pytest.mark.integration


def _no_replay(stored: StoredReceipt) -> None:
    raise AssertionError(f"no concurrent request holds the key: {stored}")


def _cancelled(task: Task, now: datetime) -> Task:
    """The task as a cancel decided on it would leave it."""
    return replace(
        task,
        state=TaskState.CANCELLED,
        revision=task.revision + 1,
        cancel_requested_at=now,
        completed_at=now,
        current_attempt_id=None,
        updated_at=now,
    )


async def _apply_stale(
    backend: Backend,
    principal: Principal,
    move: OperatorMove,
    task: Task,
    attempt: LiveAttempt | None = None,
) -> Scope:
    """Apply `move` decided on `task` (and `attempt`) as read earlier; its request's scope."""
    scope = Scope(principal.namespace_id, OPERATION, task.id, new_key())
    receipt = StoredReceipt(cancel_digest(CancelRequest(task.revision, "r")), 200, "{}")

    async def step(tx: OperatorTransaction) -> None:
        now, stored = await tx.clock_and_receipt(scope)
        assert stored is None
        done = _cancelled(task, now)
        write = OperatorWrite(
            move, task, done, {"reason": "r"}, scope, receipt, principal, OPERATION, "r", attempt
        )
        await tx.apply_operator_write(now, write)

    with pytest.raises(ConcurrentChange):
        await backend.task_store.operator_write(scope, step, _no_replay)
    return scope


async def test_a_write_on_a_task_that_moved_since_its_read_rolls_back(backend: Backend) -> None:
    principal = await backend.tenant()
    task_id = await submitted(backend, principal)
    read = await backend.get(principal, task_id)  # WAITING, revision 1
    (grant,) = await backend.lease(worker_peer(principal), 1)  # LEASED, revision 2
    leased = await backend.get(principal, task_id)
    scope = await _apply_stale(backend, principal, OperatorMove.CANCEL_WAITING, read)
    assert await backend.get(principal, task_id) == leased
    assert [e.kind for e in await backend.events(task_id)] == ["ACCEPTED", "LEASED"]
    done = await backend.cancel(principal, task_id, CancelRequest(2, "r"), scope.key)
    assert not done.deduplicated  # the rolled-back write kept no receipt
    assert done.tell_worker == grant.attempt_id


async def test_a_cancelled_lease_whose_attempt_started_meanwhile_rolls_back(
    backend: Backend,
) -> None:
    principal = await backend.tenant()
    task_id = await submitted(backend, principal)
    peer = worker_peer(principal)
    (grant,) = await backend.lease(peer, 1)

    async def read(tx: OperatorTransaction) -> LiveAttempt:
        return (await tx.load_attempts([grant.attempt_id]))[grant.attempt_id]

    leased = await backend.task_store.operator_write(Scope("", "", "", ""), read, _no_replay)
    assert (await backend.start(peer, ref_of(grant))).ok
    running = await backend.get(principal, task_id)  # the task's own condition holds
    await _apply_stale(backend, principal, OperatorMove.CANCEL_LEASE, running, leased)
    assert await backend.get(principal, task_id) == running
    assert running.cancel_requested_at is None
    finished = await backend.finish(peer, result_of(grant))
    assert finished.ok and finished.fields["task_state"] == "SUCCEEDED"

"""One operator write on one existing task (cancel, retry, resolve), in one transaction of the
store (`TaskStore.operator_write`): the task as read and checked visible, the replay of a key
used already, the change planned (reads, locks and the pure decision: it may raise and then
nothing is written), then one typed `OperatorWrite`: the idempotency record first (a
concurrent request with the same key fails on it and replays the winner's receipt), the
conditional task update (revision + 1), its event and the audit row, committed together or
not at all (O-SUB-4, O-CAN-1, O-NOTE-6).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from agentcall.orbit.domain.audit import Source, current_source
from agentcall.orbit.domain.canonical import Digest
from agentcall.orbit.domain.errors import NotFound, StateConflict
from agentcall.orbit.domain.evidence import EvidenceItem
from agentcall.orbit.domain.idempotency import Scope, StoredReceipt, check_replay
from agentcall.orbit.domain.jsonvalue import JsonValue, dumps
from agentcall.orbit.domain.task import Task, task_view
from agentcall.orbit.domain.tokens import Principal
from agentcall.orbit.domain.transitions import LiveAttempt, OperatorMove
from agentcall.orbit.store.idempotency import replaying
from agentcall.orbit.store.ports import (
    ConcurrentChange,
    OperatorTransaction,
    OperatorWrite,
    TaskStore,
)

__all__ = ["Change", "Plan", "TaskWrite", "Written", "replaying", "write_task"]


@dataclass(frozen=True, slots=True)
class Written:
    """What the write answers: HTTP status, replay or not, the task JSON text; and, for a
    cancel of a live attempt, the attempt whose worker is to be told (after the commit)."""

    status: int
    deduplicated: bool
    task_text: str
    tell_worker: str | None = None


@dataclass(frozen=True, slots=True)
class Change:
    """A planned change: `move` of `task` (as read: the write's condition) to `done`, its
    event's `detail`; the attempt it ends or records `evidence` on (see `OperatorWrite`)."""

    move: OperatorMove
    task: Task
    done: Task
    detail: dict[str, JsonValue]
    attempt: LiveAttempt | None = None
    evidence: tuple[EvidenceItem, ...] = ()
    tell_worker: str | None = None


Plan = Callable[[OperatorTransaction, Task, datetime], Awaitable[Change]]


@dataclass(frozen=True, slots=True)
class TaskWrite:
    principal: Principal
    task_id: str
    scope: Scope
    digest: Digest
    action: str  # the audit action, e.g. "tasks.retry"
    request_id: str
    source: Source | None = None  # the request's; the bound one (`domain.audit`) if None


async def write_task(store: TaskStore, write: TaskWrite, plan: Plan) -> Written:
    async def step(tx: OperatorTransaction) -> Written:
        task = await tx.load_task(write.task_id)
        if task is None:
            raise NotFound("task not found")
        write.principal.require_visible(task.namespace_id, task.queue_id)
        now, stored = await tx.clock_and_receipt(write.scope)
        if stored is not None:
            return _replay(stored, write.digest)
        change = await plan(tx, task, now)
        receipt = StoredReceipt(write.digest, 200, dumps(task_view(change.done)))
        operator = OperatorWrite(
            change.move,
            change.task,
            change.done,
            change.detail,
            write.scope,
            receipt,
            write.principal,
            write.action,
            write.request_id,
            change.attempt,
            change.evidence,
            write.source or current_source(),
        )
        try:
            await tx.apply_operator_write(now, operator)
        except ConcurrentChange:
            raise StateConflict("the task changed concurrently; GET it and decide again") from None
        return Written(200, False, receipt.receipt_text, change.tell_worker)

    return await store.operator_write(write.scope, step, lambda got: _replay(got, write.digest))


def _replay(stored: StoredReceipt, digest: Digest) -> Written:
    check_replay(stored, digest)
    return Written(200, True, stored.receipt_text)

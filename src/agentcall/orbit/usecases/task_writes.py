"""One operator write on one existing task (cancel, retry, resolve), in one transaction:
the idempotency record first (a concurrent request with the same key fails on it and replays
the winner's receipt), then the change's writes (conditional task update with revision + 1 and
its event), the audit row, all committed together or not at all (O-SUB-4, O-CAN-1, O-NOTE-6).

A change is planned first (reads, locks and the pure decision: it may raise and then nothing
is written), then written.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.canonical import Digest
from agentcall.orbit.domain.errors import StateConflict, Unavailable
from agentcall.orbit.domain.idempotency import Scope, StoredReceipt, check_replay
from agentcall.orbit.domain.jsonvalue import JsonValue, dumps
from agentcall.orbit.domain.task import Task, task_view
from agentcall.orbit.domain.tokens import Principal
from agentcall.orbit.store import execution, idempotency, journal
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.tasks import visible_task

T = TypeVar("T")


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
    task: Task  # the task as the change leaves it
    write: Callable[[AsyncConnection], Awaitable[None]]
    tell_worker: str | None = None


Plan = Callable[[AsyncConnection, Task, datetime], Awaitable[Change]]


@dataclass(frozen=True, slots=True)
class TaskWrite:
    principal: Principal
    task_id: str
    scope: Scope
    digest: Digest
    action: str  # the audit action, e.g. "tasks.retry"
    request_id: str


async def write_task(db: Database, write: TaskWrite, plan: Plan) -> Written:
    async def once() -> Written:
        async with db.write() as conn:
            task = await visible_task(conn, write.principal, write.task_id)
            stored = await idempotency.find(conn, write.scope)
            if stored is not None:
                return _replay(stored, write.digest)
            now = await db.now(conn)
            change = await plan(conn, task, now)
            receipt = StoredReceipt(write.digest, 200, dumps(task_view(change.task)))
            await idempotency.insert(conn, write.scope, write.digest, task.id, receipt, now)
            await change.write(conn)
            await journal.append_audit(
                conn, write.principal, write.action, change.task, write.request_id, now
            )
        return Written(200, False, receipt.receipt_text, change.tell_worker)

    return await replaying(db, once, write.scope, lambda stored: _replay(stored, write.digest))


async def replaying(
    db: Database,
    once: Callable[[], Awaitable[T]],
    scope: Scope,
    replay: Callable[[StoredReceipt], T],
) -> T:
    """Run `once` (retried on transient failures); when a concurrent request with the same key
    won the idempotency record, answer `replay` of its stored receipt."""

    async def attempt() -> T:
        try:
            return await once()
        except sa.exc.IntegrityError as exc:
            if not db.is_duplicate(exc):
                raise
        async with db.read() as conn:  # a concurrent request won the key
            stored = await idempotency.find(conn, scope)
        if stored is None:
            raise Unavailable("concurrent request on the same key; retry with the same key")
        return replay(stored)

    return await db.retrying(attempt)


def _replay(stored: StoredReceipt, digest: Digest) -> Written:
    check_replay(stored, digest)
    return Written(200, True, stored.receipt_text)


async def move_task(
    task: Task,
    done: Task,
    values: dict[str, Any],
    kind: str,
    now: datetime,
    detail: dict[str, JsonValue],
    conn: AsyncConnection,
) -> None:
    """The task from (its state, its revision) to `values` (revision + 1) and its `kind`
    event; StateConflict if it changed meanwhile."""
    if not await execution.update_task(conn, task.id, task.state, task.revision, values):
        raise StateConflict("the task changed concurrently; GET it and decide again")
    await journal.append_event(conn, done, kind, task.state, now, detail)

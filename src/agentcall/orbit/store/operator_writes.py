"""The SQL store's `OperatorTransaction` (`agentcall.orbit.store.ports`): the reads of an operator
write on one task (cancel, retry, resolve) and its one writer, on the connection of one write
transaction of SQLite or MySQL/MariaDB.

`operator_writes` turns an `OperatorWrite` into its statements in two steps, each one round
trip on MySQL/MariaDB (`connector.write_all`). First the conditional ones: the receipt INSERT
(a concurrent request with the same key waits on its unique key, then fails on it, and
`idempotency.replaying` answers the winner's receipt), the attempt's end for a cancelled lease
(only from LEASED) and the task UPDATE (only from its state and revision as read); an UPDATE
that matched no row raises `ConcurrentChange` there, and the transaction rolls back. Then,
once the task is known to have moved, its event (unique per task revision: sent with a stale
UPDATE it would collide with the event of the change that won), the audit line and a
resolution's evidence."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.attempts import AttemptState
from agentcall.orbit.domain.evidence import EvidenceItem
from agentcall.orbit.domain.idempotency import Scope, StoredReceipt
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.jsonvalue import dumps
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.transitions import (
    LiveAttempt,
    OperatorMove,
    Row,
    cancelled_attempt_row,
    event_row,
    operator_task_row,
)
from agentcall.orbit.store import evidence, execution, idempotency, journal
from agentcall.orbit.store.attempts import last_attempt_id
from agentcall.orbit.store.connector import write_all
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.ports import OperatorWrite
from agentcall.orbit.store.sql import Insert, Update, Write
from agentcall.orbit.store.tables import audit_log, task_attempts, task_events, tasks
from agentcall.orbit.store.tasks import load_task


class SqlOperatorTransaction:
    """`OperatorTransaction` on one connection inside its caller's write transaction."""

    __slots__ = ("conn", "db")

    def __init__(self, db: Database, conn: AsyncConnection) -> None:
        self.db = db
        self.conn = conn

    async def load_task(self, task_id: str) -> Task | None:
        return await load_task(self.conn, task_id)

    async def clock_and_receipt(self, scope: Scope) -> tuple[datetime, StoredReceipt | None]:
        now, found = await idempotency.now_and_find_many(
            self.db, self.conn, scope.operation, scope.target, [scope]
        )
        return now, found.get(scope)

    async def load_attempts(self, attempt_ids: Sequence[str]) -> dict[str, LiveAttempt]:
        return await execution.load_attempts(self.conn, attempt_ids)

    async def last_attempt(self, task_id: str) -> LiveAttempt | None:
        attempt_id = await last_attempt_id(self.conn, task_id)
        if attempt_id is None:
            return None
        return (await execution.load_attempts(self.conn, [attempt_id])).get(attempt_id)

    async def check_evidence(
        self, live: LiveAttempt, items: Sequence[EvidenceItem]
    ) -> list[EvidenceItem]:
        return await evidence.check_evidence(self.conn, live, items)

    async def apply_operator_write(self, now: datetime, write: OperatorWrite) -> None:
        conditional, journal_rows = operator_writes(now, write)
        await write_all(self.conn, conditional)
        await write_all(self.conn, journal_rows)


def operator_writes(now: datetime, write: OperatorWrite) -> tuple[list[Write], list[Write]]:
    """The statements of one operator write: the conditional ones, then the rest (see the
    module's docstring for why in two steps)."""
    task, done = write.task, write.done
    writes: list[Write] = [idempotency.receipt_rows([(write.scope, task.id, write.receipt)], now)]
    if write.move is OperatorMove.CANCEL_LEASE:
        assert write.attempt is not None  # OperatorWrite checks it
        ended = {"id": write.attempt.id, **cancelled_attempt_row(done, now)}
        writes.append(Update(task_attempts, [ended], {"state": AttemptState.LEASED.value}))
    moved = {"id": task.id, "revision": done.revision, **operator_task_row(write.move, done, now)}
    writes.append(Update(tasks, [moved], {"state": task.state.value, "revision": task.revision}))
    audit = journal.audit_row(
        write.principal, write.action, done, write.request_id, now, write.source, write.detail
    )
    rest: list[Write] = [
        Insert(task_events, [operator_event_row(write, now)]),
        Insert(audit_log, [audit]),
    ]
    if write.evidence:
        assert write.attempt is not None
        rest += evidence.evidence_writes(write.attempt, write.evidence, now)
    return writes, rest


def operator_event_row(write: OperatorWrite, now: datetime) -> Row:
    """The write's event: its task from the state read to the state and revision it left."""
    task, done = write.task, write.done
    kind, detail = write.move.event_kind, dumps(dict(write.detail))
    return event_row(task.id, done.revision, kind, task.state, done.state, detail, now, new_id())

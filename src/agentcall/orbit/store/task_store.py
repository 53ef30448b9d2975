"""The SQL store's `TaskStore` (`agentcall.orbit.store.ports`) on SQLite or MySQL/MariaDB: each
operation its own transaction (a submit by group commit when `groups` is given), retried on
transient failures; `transaction()` is one write transaction for the engine's `AttemptTransaction`,
`operator_write` one for an `OperatorTransaction` (`agentcall.orbit.store.operator_writes`)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import datetime
from typing import TypeVar

from agentcall.orbit.domain.audit import AuditEntry, AuditPosition, AuditQuery
from agentcall.orbit.domain.cursor import Position
from agentcall.orbit.domain.idempotency import Scope, StoredReceipt
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.task import Task, TaskSummary
from agentcall.orbit.domain.tokens import TokenRecord
from agentcall.orbit.store import audit, idempotency, tasks, tenancy
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.group_plan import PendingSubmit
from agentcall.orbit.store.operator_writes import SqlOperatorTransaction
from agentcall.orbit.store.ports import AttemptTransaction, OperatorTransaction, TaskStore
from agentcall.orbit.store.receipts import Receipt
from agentcall.orbit.store.submit_group import SubmitGroups
from agentcall.orbit.store.submits import submit_alone
from agentcall.orbit.store.transactions import SqlAttempts

T = TypeVar("T")


class SqlTaskStore:
    def __init__(self, db: Database, groups: SubmitGroups | None = None) -> None:
        self.db = db
        self.groups = groups

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[tuple[AttemptTransaction, datetime]]:
        async with self.db.write() as conn:
            yield SqlAttempts(conn), await self.db.now(conn)

    async def submit(self, item: PendingSubmit) -> Receipt:
        if self.groups is not None:
            return await self.groups.submit(item)
        return await submit_alone(self.db, item)

    async def operator_write(
        self,
        scope: Scope,
        step: Callable[[OperatorTransaction], Awaitable[T]],
        replay: Callable[[StoredReceipt], T],
    ) -> T:
        async def once() -> T:
            async with self.db.write() as conn:
                return await step(SqlOperatorTransaction(self.db, conn))

        return await idempotency.replaying(self.db, once, scope, replay)

    async def load_task(self, task_id: str) -> Task | None:
        async def once() -> Task | None:
            async with self.db.single_read() as conn:
                return await tasks.load_task(conn, task_id)

        return await self.db.retrying(once)

    async def page(
        self, queue_id: str, state: TaskState | None, after: Position | None, limit: int
    ) -> list[TaskSummary]:
        async def once() -> list[TaskSummary]:
            async with self.db.single_read() as conn:
                return await tasks.page(conn, queue_id, state, after, limit)

        return await self.db.retrying(once)

    async def load_token(self, secret_sha256: str) -> TokenRecord | None:
        async def once() -> TokenRecord | None:
            async with self.db.single_read() as conn:
                return await tenancy.load_token(conn, secret_sha256)

        return await self.db.retrying(once)

    async def record_audit(self, entries: Sequence[AuditEntry]) -> None:
        async def once() -> None:
            async with self.db.write() as conn:
                await audit.insert_entries(conn, entries, await self.db.now(conn))

        await self.db.retrying(once)

    async def audit_page(
        self, query: AuditQuery, after: AuditPosition | None, limit: int
    ) -> list[AuditEntry]:
        async def once() -> list[AuditEntry]:
            async with self.db.single_read() as conn:
                return await audit.page(conn, query, after, limit)

        return await self.db.retrying(once)


def conforms(db: Database) -> TaskStore:
    """`SqlTaskStore` is a `TaskStore` (mypy checks it here)."""
    return SqlTaskStore(db)

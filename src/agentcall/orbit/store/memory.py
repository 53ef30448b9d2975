"""The in-memory twin of Orbit's store: `TaskStore` and `AttemptTransaction` of
`agentcall.orbit.store.ports` over plain records, for the unit tests of the use cases and
the engine.

It keeps the semantics that make such a test mean something:

- the clock is injected (`clock`, aware UTC); a transaction reads it once at its start, like
  the database clock, and `clocked_lease_candidates` reads it again, like its statement;
- transactions run one at a time (SQLite's single writer) on a copy of the state that
  replaces the committed state only when the block ends without an error: an exception rolls
  back every write of the transaction;
- every task write is conditional on the state and revision it was read at, every attempt
  write on the state: a stale write raises `ConcurrentChange`; a move the state machine
  forbids raises `IllegalTransition`; events are unique per (task, revision);
- idempotency records are kept per scope with the request's digest: a replay answers the
  first receipt, other content raises `IdempotencyConflict` (`agentcall.orbit.domain.idempotency`);
- lease tokens are stored as digests only (the engine checks them with
  `agentcall.orbit.domain.lease_tokens`), and eligibility is the pure rule the SQL mirrors.

Its transaction (`MemoryWrites`) is both the engine's `AttemptTransaction` and the operator
writes' `OperatorTransaction` (cancel, retry, resolve: the receipt, the conditional task and
attempt updates from the same row builders as the SQL store, the event, the audit line and the
evidence, all or nothing). Beyond the port, the store has tenancy (`init`, `add_queue`,
`add_token`) and reads for tests (`events`, `attempt`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import TYPE_CHECKING, TypeVar

from agentcall.orbit.domain.attempts import AttemptState
from agentcall.orbit.domain.audit import AuditEntry, AuditPosition, AuditQuery
from agentcall.orbit.domain.cursor import Position
from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.idempotency import Scope, StoredReceipt, check_replay
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.jsonvalue import dumps
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.submit import OPERATION as SUBMIT
from agentcall.orbit.domain.submit import plan_times
from agentcall.orbit.domain.task import Task, TaskSummary, new_task, summarize, task_view
from agentcall.orbit.domain.tokens import ALL_PERMISSIONS, Permission, TokenRecord, hash_secret
from agentcall.orbit.domain.transitions import (
    LiveAttempt,
    OperatorMove,
    cancelled_attempt_row,
    event_row,
    operator_task_row,
)
from agentcall.orbit.store import audit
from agentcall.orbit.store.group_plan import PendingSubmit
from agentcall.orbit.store.memory_attempts import MemoryTransaction
from agentcall.orbit.store.memory_state import MemoryState, Offer, Row, StoredRecord
from agentcall.orbit.store.ports import OperatorTransaction, OperatorWrite
from agentcall.orbit.store.receipts import Receipt

if TYPE_CHECKING:
    from agentcall.orbit.store.ports import TaskStore

T = TypeVar("T")

__all__ = ["ManualClock", "MemoryStore", "MemoryWrites"]


def utc_now() -> datetime:
    return datetime.now(UTC)


class ManualClock:
    """A clock for the twin that moves only when told (`advance`), and by one microsecond
    per reading, as the database clock moves between two transactions."""

    def __init__(self, at: datetime) -> None:
        if at.tzinfo is None:
            raise ValueError("the clock needs an aware UTC time")
        self.at = at

    def __call__(self) -> datetime:
        self.at += timedelta(microseconds=1)
        return self.at

    def advance(self, ms: int) -> None:
        self.at += timedelta(milliseconds=ms)


class MemoryWrites(MemoryTransaction):
    """The twin's transaction: the engine's port, the operator writes' port, and the
    statements of a submit (receipt, event, audit line)."""

    async def find_receipt(self, scope: Scope) -> StoredReceipt | None:
        record = self.state.receipts.get(scope)
        return None if record is None else record.receipt

    async def insert_receipt(
        self, scope: Scope, task_id: str, receipt: StoredReceipt, now: datetime
    ) -> None:
        """The first receipt of a key; `KeyError` for a key taken already (the unique key)."""
        if scope in self.state.receipts:
            raise KeyError(f"idempotency key {scope.key!r} is taken")
        self.state.receipts[scope] = StoredRecord(receipt, task_id, now)

    async def append_event(self, row: Row) -> None:
        self.state.add_event(row)

    async def append_audit(self, row: Row) -> None:
        self.state.audits.append(dict(row))

    # ------------------------------------------------------------------ operator writes
    async def load_task(self, task_id: str) -> Task | None:
        return self.state.tasks.get(task_id)

    async def clock_and_receipt(self, scope: Scope) -> tuple[datetime, StoredReceipt | None]:
        return self.clock(), await self.find_receipt(scope)

    async def last_attempt(self, task_id: str) -> LiveAttempt | None:
        mine = [row for row in self.state.attempts.values() if row["task_id"] == task_id]
        if not mine:
            return None
        return self._live(max(mine, key=lambda row: int(row["number"])))

    async def apply_operator_write(self, now: datetime, write: OperatorWrite) -> None:
        """In the SQL store's order; a failure anywhere rolls the transaction back whole."""
        task, done = write.task, write.done
        await self.insert_receipt(write.scope, task.id, write.receipt, now)
        if write.move is OperatorMove.CANCEL_LEASE:
            assert write.attempt is not None  # OperatorWrite checks it
            ended = cancelled_attempt_row(done, now)
            self.state.move_attempt(write.attempt.id, AttemptState.LEASED, ended)
        values = {**operator_task_row(write.move, done, now), "revision": done.revision}
        self.state.move_task(task.id, task.state, task.revision, values)
        kind, detail = write.move.event_kind, dumps(dict(write.detail))
        moved = (task.state, done.state)
        await self.append_event(
            event_row(task.id, done.revision, kind, *moved, detail, now, new_id())
        )
        principal, request_id = write.principal, write.request_id
        await self.append_audit(
            audit.task_row(
                principal, write.action, done, request_id, now, write.source, write.detail
            )
        )
        if write.evidence:
            assert write.attempt is not None
            await self.insert_evidence(write.attempt, write.evidence, now)


class MemoryStore:
    """`clock`: the store's clock (aware UTC), the process clock unless a test injects one."""

    def __init__(self, clock: Callable[[], datetime] = utc_now) -> None:
        self.clock = clock
        self.state = MemoryState()
        self._lock = asyncio.Lock()

    # ------------------------------------------------------------------ transactions
    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[tuple[MemoryWrites, datetime]]:
        async with self._lock:
            working = self.state.copy()
            yield MemoryWrites(working, self._now), self._now()
            self.state = working  # reached only when the block raised nothing

    async def operator_write(
        self,
        scope: Scope,
        step: Callable[[OperatorTransaction], Awaitable[T]],
        replay: Callable[[StoredReceipt], T],
    ) -> T:
        """Transactions run one at a time, so a concurrent request with the same key never
        gets past its receipt check: `replay` is for the port's SQL stores."""
        async with self._lock:
            working = self.state.copy()
            answer = await step(MemoryWrites(working, self._now))
            self.state = working  # reached only when the step raised nothing
        return answer

    def _now(self) -> datetime:
        now = self.clock()
        if now.tzinfo is None or now.utcoffset() is None:
            raise ValueError("the twin's clock must answer aware UTC times")
        return now.astimezone(UTC)

    # ------------------------------------------------------------------ use cases
    async def submit(self, item: PendingSubmit) -> Receipt:
        async with self.transaction() as (tx, now):
            stored = await tx.find_receipt(item.scope)
            if stored is not None:
                check_replay(stored, item.digest)
                return Receipt(200, True, stored.receipt_text)
            times = plan_times(item.request, now)
            principal = item.principal
            task = new_task(new_id(), principal.namespace_id, item.request, times, now)
            receipt = StoredReceipt(item.digest, 201, dumps(task_view(task)))
            await tx.insert_receipt(item.scope, task.id, receipt, now)
            tx.state.tasks[task.id] = task
            tx.state.lease_counts[task.id] = 0
            await tx.append_event(_accepted(task, now))
            await tx.append_audit(
                audit.task_row(principal, SUBMIT, task, item.request_id, now, item.source)
            )
        return Receipt(201, False, receipt.receipt_text)

    async def load_task(self, task_id: str) -> Task | None:
        return self.state.tasks.get(task_id)

    async def page(
        self, queue_id: str, state: TaskState | None, after: Position | None, limit: int
    ) -> list[TaskSummary]:
        found = [
            task
            for task in self.state.tasks.values()
            if task.queue_id == queue_id
            and (state is None or task.state is state)
            and (after is None or (task.created_at, task.id) < (after.created_at, after.task_id))
        ]
        found.sort(key=lambda task: (task.created_at, task.id), reverse=True)
        return [summarize(task) for task in found[: max(0, limit)]]

    async def load_token(self, secret_sha256: str) -> TokenRecord | None:
        return self.state.tokens.get(secret_sha256)

    async def record_audit(self, entries: Sequence[AuditEntry]) -> None:
        async with self.transaction() as (tx, now):
            for entry in entries:
                await tx.append_audit(audit.entry_row(entry, now))

    async def audit_page(
        self, query: AuditQuery, after: AuditPosition | None, limit: int
    ) -> list[AuditEntry]:
        """`store.audit.page` over the twin's rows: the same filters and order."""
        found = [
            audit.row_entry(SimpleNamespace(**row))
            for row in self.state.audits
            if audit.row_matches(row, query)
            and (after is None or (row["created_at"], row["id"]) < (after.at, after.entry_id))
        ]
        found.sort(key=lambda entry: (entry.at, entry.id), reverse=True)
        return found[: max(0, limit)]

    # ------------------------------------------------------------------ tenancy
    async def init(self, namespace: str, queue: str, secret: str) -> TokenRecord:
        """A namespace, its first queue and a token (secret `secret`) with every permission
        on that queue, like `orbit init`; `InvalidArgument` for a namespace that exists."""
        if namespace in self.state.namespaces.values():
            raise InvalidArgument(f"namespace {namespace!r} exists")
        namespace_id = new_id()
        self.state.namespaces[namespace_id] = namespace
        queue_id = await self.add_queue(namespace_id, queue)
        return await self.add_token(namespace_id, secret, ALL_PERMISSIONS, [queue_id])

    async def add_queue(self, namespace_id: str, name: str) -> str:
        if namespace_id not in self.state.namespaces:
            raise InvalidArgument(f"no namespace {namespace_id}")
        if (namespace_id, name) in self.state.queues.values():
            raise InvalidArgument(f"queue {name!r} exists in this namespace")
        queue_id = new_id()
        self.state.queues[queue_id] = (namespace_id, name)
        return queue_id

    async def add_token(
        self,
        namespace_id: str,
        secret: str,
        permissions: Iterable[Permission],
        queue_ids: Iterable[str],
        expires_at: datetime | None = None,
    ) -> TokenRecord:
        scopes = frozenset(queue_ids)
        if any(self.state.queues.get(q, ("",))[0] != namespace_id for q in scopes):
            raise InvalidArgument("a queue of the token is not in its namespace", "queue")
        record = TokenRecord(
            new_id(), namespace_id, frozenset(permissions), scopes, expires_at, None
        )
        self.state.tokens[hash_secret(secret)] = record
        return record

    def open_offer(self, namespace_id: str, queue_id: str) -> str:
        """A standing offer of a free slot (what `withdraw_offer` takes back)."""
        offer_id = new_id()
        self.state.offers[offer_id] = Offer(namespace_id, queue_id)
        return offer_id

    def claim_offer(self, offer_id: str, task_id: str) -> None:
        """Another process's submit claims the offer for `task_id`."""
        offer = self.state.offers[offer_id]
        self.state.offers[offer_id] = Offer(offer.namespace_id, offer.queue_id, task_id)

    # ------------------------------------------------------------------ reads for tests
    def events(self, task_id: str) -> list[Row]:
        """The task's events by revision (what `store.inspect.events` reads)."""
        rows = [row for (tid, _), row in self.state.events.items() if tid == task_id]
        return sorted(rows, key=lambda row: row["revision"])

    def attempt(self, attempt_id: str) -> Row | None:
        row = self.state.attempts.get(attempt_id)
        return None if row is None else dict(row)


def _accepted(task: Task, now: datetime) -> Row:
    return {
        "id": new_id(),
        "task_id": task.id,
        "revision": task.revision,
        "kind": "ACCEPTED",
        "from_state": None,
        "to_state": task.state.value,
        "detail": None,
        "created_at": now,
    }


if TYPE_CHECKING:  # mypy checks here that the twin implements the whole port
    _CONFORMS: TaskStore = MemoryStore()

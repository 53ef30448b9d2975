"""The store's typed interface: what the engine (`agentcall.orbit.execution`) and the use cases
(`agentcall.orbit.usecases`) call, as Protocols over plain values. Nothing above the store sees a
table, a column name or a statement: it names an operation (`write_ends`) and passes typed items
(`EndWrite`); the store turns them into its rows. Two stores implement it: the SQL store
(`agentcall.orbit.store.transactions`, SQLite and MySQL/MariaDB) and the in-memory twin
(`agentcall.orbit.store.memory`), which keeps the same semantics (revision and state checks,
lease-token fencing through `agentcall.orbit.domain.lease_tokens`, idempotency digests, the clock
passed in).

The transition items (`LeaseWrite`, `StartWrite`, `EndWrite`) and `LiveAttempt` are pure
values of `agentcall.orbit.domain.transitions`, re-exported here. Every transition item carries the
`LiveAttempt` it was decided on: the store writes it conditionally on the state read (and the
task on its state), so a row changed since the read raises `ConcurrentChange` and the caller's
transaction is rolled back whole.

The operator writes on one task (cancel, retry, resolve) run through `TaskStore.operator_write`:
one transaction of an `OperatorTransaction`, whose reads feed the use case's pure decision and
whose one writer (`apply_operator_write`) takes the typed `OperatorWrite` it decided on.

Times are the database clock read once per transaction (`now`), never the process clock."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeVar

from agentcall.orbit.domain.attempts import AttemptState, TaskErrorCode
from agentcall.orbit.domain.audit import AuditEntry, AuditPosition, AuditQuery, Source
from agentcall.orbit.domain.cursor import Position
from agentcall.orbit.domain.evidence import EvidenceItem
from agentcall.orbit.domain.idempotency import Scope, StoredReceipt
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.task import Task, TaskSummary
from agentcall.orbit.domain.tokens import Principal, TokenRecord
from agentcall.orbit.domain.transitions import (
    EndFacts,
    EndWrite,
    Holder,
    LeaseWrite,
    LiveAttempt,
    OperatorMove,
    StartWrite,
)
from agentcall.orbit.store.group_plan import PendingSubmit
from agentcall.orbit.store.receipts import Receipt
from agentcall.orbit.store.sql import ConcurrentChange

__all__ = [
    "AttemptTransaction",
    "ConcurrentChange",
    "EndFacts",
    "EndWrite",
    "HeartbeatRow",
    "Holder",
    "Leasable",
    "LeaseWrite",
    "LiveAttempt",
    "OperatorMove",
    "OperatorTransaction",
    "OperatorWrite",
    "PendingSubmit",
    "Receipt",
    "StartWrite",
    "TaskStore",
    "WaitingPastDeadline",
]

T = TypeVar("T")


# ---------------------------------------------------------------------- values read
@dataclass(frozen=True, slots=True)
class Leasable:
    """A WAITING task ready to lease, and how many leases it had so far (the next attempt's
    number is `lease_count + 1`)."""

    task: Task
    lease_count: int


@dataclass(frozen=True, slots=True)
class HeartbeatRow:
    """What a heartbeat checks of one attempt: its lease token's digest, where it belongs,
    its lease and deadline, and whether its task has a cancel requested."""

    id: str
    state: AttemptState
    token_sha256: str
    namespace_id: str
    queue_id: str
    lease_expires_at: datetime
    attempt_deadline_at: datetime
    cancel_requested: bool


@dataclass(frozen=True, slots=True)
class WaitingPastDeadline:
    """A WAITING task whose start deadline or task deadline has passed (the sweeper fails
    it with START_DEADLINE_EXCEEDED or DEADLINE_EXCEEDED)."""

    id: str
    revision: int
    queue_id: str
    start_deadline_at: datetime | None
    deadline_at: datetime


@dataclass(frozen=True, slots=True)
class OperatorWrite:
    """An operator's decided write on one task, applied whole or not at all: the first
    receipt of the request's key (`scope`), the task from (`task.state`, `task.revision`) as
    read to `done` (revision + 1) as `move` says, its event (`move.event_kind`, `detail`),
    and the audit line of `principal`'s `action`. `attempt`: for `CANCEL_LEASE` the LEASED
    attempt that ends CANCELLED with its task, for a resolution with `evidence` the task's
    last attempt, which the items (checked by `check_evidence`) are recorded on."""

    move: OperatorMove
    task: Task
    done: Task
    detail: Mapping[str, JsonValue]
    scope: Scope
    receipt: StoredReceipt
    principal: Principal
    action: str
    request_id: str
    attempt: LiveAttempt | None = None
    evidence: tuple[EvidenceItem, ...] = ()
    source: Source | None = None  # where the request came from (the audit line's)

    def __post_init__(self) -> None:
        if self.done.id != self.task.id or self.done.revision != self.task.revision + 1:
            raise ValueError("an operator write moves its task to the next revision")
        if self.attempt is None and (self.move is OperatorMove.CANCEL_LEASE or self.evidence):
            raise ValueError(f"{self.move.name} with evidence or a lease needs its attempt")


# ---------------------------------------------------------------------- operations
class AttemptTransaction(Protocol):
    """The engine's operations inside one write transaction (the batcher's). All checks of a
    batch precede its writes; a write raising `ConcurrentChange` aborts the transaction."""

    async def lease_candidates(
        self, queue_id: str, handlers: Iterable[HandlerKey], now: datetime, limit: int
    ) -> list[Leasable]:
        """Up to `limit` WAITING tasks of `queue_id` with one of `handlers`, available at
        `now` and within their deadlines, oldest-ready first (by `available_at`, then by id),
        locked for this transaction (SKIP LOCKED: rows another transaction holds are passed
        over)."""
        ...

    async def clocked_lease_candidates(
        self, queue_id: str, handlers: Iterable[HandlerKey], limit: int
    ) -> tuple[datetime | None, list[Leasable]]:
        """`lease_candidates` at the database clock read by the same statement: (that clock,
        the tasks), or (None, []) when nothing matched (no clock read is needed then)."""
        ...

    async def load_attempts(self, attempt_ids: Sequence[str]) -> dict[str, LiveAttempt]:
        """The attempts named that exist, by id, with their task's facts, locked. Unknown
        ids are left out (the caller answers ATTEMPT_NOT_FOUND)."""
        ...

    async def clocked_load_attempts(
        self, attempt_ids: Sequence[str]
    ) -> tuple[datetime | None, dict[str, LiveAttempt]]:
        """`load_attempts` at the database clock read by the same statement: (that clock, the
        attempts), or (None, {}) when none of them exists (no clock read is needed then)."""
        ...

    async def write_leases(
        self, now: datetime, leases: Sequence[LeaseWrite], *, commit: bool = False
    ) -> None:
        """Each task WAITING → LEASED (revision + 1, lease count + 1, current attempt), its
        new LEASED attempt and its LEASED event. The tasks must have been read with a lock in
        this transaction (`lease_candidates`). `commit`: the transaction commits with these
        writes where the store can send both at once (MySQL/MariaDB `hot_write`)."""
        ...

    async def write_starts(
        self, now: datetime, starts: Sequence[StartWrite], *, commit: bool = False
    ) -> None:
        """Each attempt LEASED → RUNNING (started and last heartbeat at `now`), each task
        LEASED → RUNNING (revision + 1, attempt count + 1) and a STARTED event. Raises
        `ConcurrentChange` if a row is no longer LEASED. The rows must have been read with a
        lock in this transaction (`load_attempts`); `commit` as for `write_leases`."""
        ...

    async def write_ends(
        self, now: datetime, ends: Sequence[EndWrite], *, commit: bool = False
    ) -> None:
        """Each attempt from its state as read to `outcome.attempt_state` (ended at `now`,
        reason, digest, error, the task state and revision it left), each task from its state
        as read to `outcome.task_state` (revision + 1, no current attempt; result, error,
        availability and completion as the outcome says) and one event each. Raises
        `ConcurrentChange` if an attempt or task left the state it was read in, and
        `IllegalTransition` (domain) for a move the task state machine forbids. `commit` as
        for `write_leases`, for rows this transaction read with a lock."""
        ...

    async def heartbeat_rows(self, attempt_ids: Sequence[str]) -> list[HeartbeatRow]:
        """What a heartbeat checks for each attempt named that exists."""
        ...

    async def renew_leases(
        self,
        attempt_ids: Sequence[str],
        now: datetime,
        renewed: datetime,
        rebind_to: str | None = None,
    ) -> None:
        """Each live attempt's lease to min(`renewed`, its attempt deadline), its last
        heartbeat to `now`; `rebind_to` also moves it to that connection."""
        ...

    async def shorten_leases(self, connection_id: str, cut: datetime) -> None:
        """The live leases of a closed connection end at `cut` unless they end earlier."""
        ...

    async def expired_attempts(self, now: datetime, limit: int) -> list[LiveAttempt]:
        """Up to `limit` live attempts whose lease ran out at `now`, locked."""
        ...

    async def expired_waiting(self, now: datetime, limit: int) -> list[WaitingPastDeadline]:
        """WAITING tasks past their start deadline or task deadline at `now` (each once),
        locked, up to `limit` of each kind."""
        ...

    async def fail_waiting(
        self, now: datetime, task: WaitingPastDeadline, code: TaskErrorCode
    ) -> bool:
        """WAITING → FAILED with `code` (revision + 1, completed at `now`) and its FAILED
        event; False, writing nothing, when the task left (WAITING, its revision) meanwhile."""
        ...

    async def check_evidence(
        self, live: LiveAttempt, items: Sequence[EvidenceItem]
    ) -> list[EvidenceItem]:
        """The items not stored yet for the attempt; raises `EvidenceConflict` for a known key
        with other content and `EvidenceLimit` past the per-attempt limit."""
        ...

    async def insert_evidence(
        self, live: LiveAttempt, items: Sequence[EvidenceItem], now: datetime
    ) -> None:
        """Store `items` (from `check_evidence`) in order after the attempt's existing ones."""
        ...

    async def withdraw_offer(self, offer_id: str) -> bool:
        """Take back this process's standing offer of a free slot; False if another process
        claimed it first (then its lease is on the way and this slot is gone)."""
        ...


class OperatorTransaction(Protocol):
    """The reads and the one writer of an operator write on one task (cancel, retry,
    resolve), inside the transaction of `TaskStore.operator_write`."""

    async def load_task(self, task_id: str) -> Task | None:
        """The task as this transaction sees it, or None when there is no such task."""
        ...

    async def clock_and_receipt(self, scope: Scope) -> tuple[datetime, StoredReceipt | None]:
        """The database clock (read once per transaction) and the receipt stored for the
        request's key, if any (on MySQL/MariaDB in one statement)."""
        ...

    async def load_attempts(self, attempt_ids: Sequence[str]) -> dict[str, LiveAttempt]:
        """The attempts named that exist, with their task's facts, locked (as
        `AttemptTransaction.load_attempts`: a cancel and a worker's result serialise)."""
        ...

    async def last_attempt(self, task_id: str) -> LiveAttempt | None:
        """The task's attempt with the highest number, locked; None when it had none."""
        ...

    async def check_evidence(
        self, live: LiveAttempt, items: Sequence[EvidenceItem]
    ) -> list[EvidenceItem]:
        """The items not stored yet for the attempt (as `AttemptTransaction.check_evidence`:
        `EvidenceConflict`, `EvidenceLimit`)."""
        ...

    async def apply_operator_write(self, now: datetime, write: OperatorWrite) -> None:
        """The whole write: the receipt first (a key taken meanwhile raises the store's
        duplicate error, which `TaskStore.operator_write` answers with the winner's
        receipt), the attempt's end for `CANCEL_LEASE` (conditional on LEASED), the task
        update conditional on its state and revision as read, the event, the audit line and
        the evidence. Raises `ConcurrentChange` when the task or attempt moved since it was
        read, before writing its event; the transaction then rolls back whole. On
        MySQL/MariaDB two round trips: the conditional statements, then the others."""
        ...


class TaskStore(Protocol):
    """The operations of the use cases, each its own transaction (or a group's: submits
    arriving together may share one commit), and the engine's transactions."""

    def transaction(self) -> AbstractAsyncContextManager[tuple[AttemptTransaction, datetime]]:
        """One write transaction and the database clock read at its start; committed when the
        block ends, rolled back when it raises."""
        ...

    async def submit(self, item: PendingSubmit) -> Receipt:
        """Accept a checked submit (O-SUB-1): 201 with the new task's acceptance snapshot
        (WAITING, revision 1) once committed, or, for a key already used in the scope, 200 and
        the first receipt when the request digest matches; `IdempotencyConflict` (domain) when
        it does not; `InvalidArgument` when the times do not fit the database clock."""
        ...

    async def operator_write(
        self,
        scope: Scope,
        step: Callable[[OperatorTransaction], Awaitable[T]],
        replay: Callable[[StoredReceipt], T],
    ) -> T:
        """`step` in one write transaction (committed when it returns, rolled back when it
        raises), run again on transient failures; when a concurrent request with the same key
        (`scope`) stored its receipt first, the answer is `replay` of that receipt."""
        ...

    async def load_task(self, task_id: str) -> Task | None:
        """The task, or None when there is no such task."""
        ...

    async def page(
        self, queue_id: str, state: TaskState | None, after: Position | None, limit: int
    ) -> list[TaskSummary]:
        """Up to `limit` tasks of the queue (of `state` if given), newest created first, by
        keyset after `after`."""
        ...

    async def load_token(self, secret_sha256: str) -> TokenRecord | None:
        """The API token whose secret has this digest, or None."""
        ...

    async def record_audit(self, entries: Sequence[AuditEntry]) -> None:
        """Store audit entries in their own transaction at the database clock, for an action
        that has no task transaction to join (a token, a queue's settings, a schedule, a
        bulk operation): call it right after the action committed. Task writes record
        theirs in their own transaction (`OperatorWrite`)."""
        ...

    async def audit_page(
        self, query: AuditQuery, after: AuditPosition | None, limit: int
    ) -> list[AuditEntry]:
        """Up to `limit` entries matching `query`, newest first by (at, id), after `after`."""
        ...

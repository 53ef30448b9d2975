"""The SQL store's `AttemptTransaction` (`agentcall.orbit.store.ports`): the engine's operations
inside one transaction of SQLite or MySQL/MariaDB, on the caller's connection.

One batched writer per transition kind: `write_leases`, `write_starts`, `write_ends`, each one
multi-row UPDATE per (attempt state, task state) read and one multi-row INSERT of events for
the whole batch, sent as one round trip on MySQL/MariaDB (`connector.write_all`). The rows come
from the pure builders of `agentcall.orbit.domain.transitions`. Every UPDATE is conditional on the
state its rows were read in (locked by that read), so it matches every row it names or raises
`ConcurrentChange`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from agentcall.orbit.domain.attempts import AttemptState, TaskErrorCode
from agentcall.orbit.domain.evidence import EvidenceItem
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.domain.states import TaskState, check_transition
from agentcall.orbit.domain.transitions import (
    ERROR_MESSAGES,
    EndWrite,
    LeaseWrite,
    LiveAttempt,
    StartWrite,
    end_attempt_row,
    end_event_row,
    end_task_row,
    event_row,
    lease_attempt_row,
    lease_event_row,
    start_event_row,
)
from agentcall.orbit.store import evidence, execution, offers
from agentcall.orbit.store.connector import HotConnection, commit_with, write_all
from agentcall.orbit.store.ports import HeartbeatRow, Leasable, WaitingPastDeadline
from agentcall.orbit.store.sql import Increment, Insert, Update, Write
from agentcall.orbit.store.tables import task_attempts, task_events, tasks
from agentcall.orbit.store.tasks import row_task, task_row

_LEASED, _RUNNING = AttemptState.LEASED.value, AttemptState.RUNNING.value


class SqlAttempts:
    """`AttemptTransaction` on one connection inside its caller's transaction."""

    __slots__ = ("conn",)

    def __init__(self, conn: HotConnection) -> None:
        self.conn = conn

    # ------------------------------------------------------------------ reads
    async def lease_candidates(
        self, queue_id: str, handlers: Iterable[HandlerKey], now: datetime, limit: int
    ) -> list[Leasable]:
        rows = await execution.lease_candidates(self.conn, queue_id, handlers, now, limit)
        return [Leasable(row_task(row), row.lease_count) for row in rows]

    async def clocked_lease_candidates(
        self, queue_id: str, handlers: Iterable[HandlerKey], limit: int
    ) -> tuple[datetime | None, list[Leasable]]:
        now, rows = await execution.clocked_lease_candidates(self.conn, queue_id, handlers, limit)
        return now, [Leasable(row_task(row), row.lease_count) for row in rows]

    async def load_attempts(self, attempt_ids: Sequence[str]) -> dict[str, LiveAttempt]:
        return await execution.load_attempts(self.conn, attempt_ids)

    async def clocked_load_attempts(
        self, attempt_ids: Sequence[str]
    ) -> tuple[datetime | None, dict[str, LiveAttempt]]:
        return await execution.clocked_load_attempts(self.conn, attempt_ids)

    async def heartbeat_rows(self, attempt_ids: Sequence[str]) -> list[HeartbeatRow]:
        return [
            HeartbeatRow(
                row.id,
                AttemptState(row.state),
                row.lease_token_sha256,
                row.namespace_id,
                row.queue_id,
                row.lease_expires_at,
                row.attempt_deadline_at,
                row.cancel_requested_at is not None,
            )
            for row in await execution.heartbeat_rows(self.conn, attempt_ids)
        ]

    async def expired_attempts(self, now: datetime, limit: int) -> list[LiveAttempt]:
        return await execution.expired_attempts(self.conn, now, limit)

    async def expired_waiting(self, now: datetime, limit: int) -> list[WaitingPastDeadline]:
        return [
            WaitingPastDeadline(
                row.id, row.revision, row.queue_id, row.start_deadline_at, row.deadline_at
            )
            for row in await execution.expired_waiting(self.conn, now, limit)
        ]

    async def check_evidence(
        self, live: LiveAttempt, items: Sequence[EvidenceItem]
    ) -> list[EvidenceItem]:
        return await evidence.check_evidence(self.conn, live, items)

    # ------------------------------------------------------------------ writes
    async def write_leases(
        self, now: datetime, leases: Sequence[LeaseWrite], *, commit: bool = False
    ) -> None:
        if leases:
            await _written(self.conn, lease_writes(now, leases), commit)

    async def write_starts(
        self, now: datetime, starts: Sequence[StartWrite], *, commit: bool = False
    ) -> None:
        if starts:
            await _written(self.conn, start_writes(now, starts), commit)

    async def write_ends(
        self, now: datetime, ends: Sequence[EndWrite], *, commit: bool = False
    ) -> None:
        if ends:
            await _written(self.conn, end_writes(now, ends), commit)

    async def renew_leases(
        self,
        attempt_ids: Sequence[str],
        now: datetime,
        renewed: datetime,
        rebind_to: str | None = None,
    ) -> None:
        await execution.renew_leases(self.conn, list(attempt_ids), now, renewed, rebind_to)

    async def shorten_leases(self, connection_id: str, cut: datetime) -> None:
        await execution.shorten_leases(self.conn, connection_id, cut)

    async def fail_waiting(
        self, now: datetime, task: WaitingPastDeadline, code: TaskErrorCode
    ) -> bool:
        check_transition(TaskState.WAITING, TaskState.FAILED)
        values = {
            "state": TaskState.FAILED.value,
            "updated_at": now,
            "completed_at": now,
            "error_code": code.value,
            "error_message": ERROR_MESSAGES[code],
        }
        waiting = TaskState.WAITING
        if not await execution.update_task(self.conn, task.id, waiting, task.revision, values):
            return False
        detail = f'{{"reason":"{code.value}","error_code":"{code.value}"}}'
        moved = (waiting, TaskState.FAILED)
        row = event_row(task.id, task.revision + 1, "FAILED", *moved, detail, now, new_id())
        await execution.insert_events(self.conn, [row])
        return True

    async def insert_evidence(
        self, live: LiveAttempt, items: Sequence[EvidenceItem], now: datetime
    ) -> None:
        await evidence.insert_evidence(self.conn, live, items, now)

    async def withdraw_offer(self, offer_id: str) -> bool:
        return await offers.withdraw(self.conn, offer_id)


async def _written(conn: HotConnection, writes: Sequence[Write], commit: bool) -> None:
    """A transition's writes; with `commit` the transaction's COMMIT goes with them where the
    store can send both at once (`connector.commit_with`: the rows were read locked in this
    transaction, so no UPDATE can come up short)."""
    await (commit_with(conn, writes) if commit else write_all(conn, writes))


def lease_writes(now: datetime, leases: Sequence[LeaseWrite]) -> list[Write]:
    """The tasks WAITING → LEASED (locked by this transaction's read: plain increments), their
    attempts and LEASED events."""
    task_rows = [{"id": lease.task.id, "current_attempt_id": lease.attempt_id} for lease in leases]
    leased = {
        "state": TaskState.LEASED.value,
        "revision": Increment(),
        "lease_count": Increment(),
        "updated_at": now,
    }
    return [
        Update(tasks, task_rows, {"state": TaskState.WAITING.value}, leased),
        Insert(task_attempts, [lease_attempt_row(lease, now) for lease in leases]),
        Insert(task_events, lease_event_rows(now, leases)),
    ]


def lease_event_rows(now: datetime, leases: Sequence[LeaseWrite]) -> list[dict[str, Any]]:
    return [lease_event_row(lease.task, lease.attempt_id, now, new_id()) for lease in leases]


def start_writes(now: datetime, starts: Sequence[StartWrite]) -> list[Write]:
    started = {"state": _RUNNING, "started_at": now, "last_heartbeat_at": now}
    running = {
        "state": TaskState.RUNNING.value,
        "revision": Increment(),
        "attempt_count": Increment(),
        "updated_at": now,
    }
    return [
        Update(
            task_attempts,
            [{"id": s.live.id, "lease_expires_at": s.lease_expires_at} for s in starts],
            where={"state": _LEASED},
            static=started,
        ),
        Update(
            tasks,
            [{"id": s.live.task_id} for s in starts],
            where={"state": TaskState.LEASED.value},
            static=running,
        ),
        Insert(task_events, [start_event_row(s, now, new_id()) for s in starts]),
    ]


def end_writes(now: datetime, ends: Sequence[EndWrite]) -> list[Write]:
    """One UPDATE of attempts per attempt state read, one of tasks per task state read (a
    batch of results: one each), one INSERT of all the events."""
    first = ends[0].live
    alike = True  # a batch of results: every attempt and task RUNNING, one group
    for end in ends:
        check_transition(end.live.task_state, end.outcome.task_state)
        alike = alike and end.live.state is first.state and end.live.task_state is first.task_state
    by_attempt: dict[AttemptState, list[EndWrite]] = {}
    by_task: dict[TaskState, list[EndWrite]] = {}
    if alike:
        by_attempt[first.state] = by_task[first.task_state] = list(ends)
    else:
        for end in ends:
            by_attempt.setdefault(end.live.state, []).append(end)
            by_task.setdefault(end.live.task_state, []).append(end)
    ended = {"ended_at": now}
    moved = {"revision": Increment(), "updated_at": now, "current_attempt_id": None}
    writes: list[Write] = [
        Update(task_attempts, [end_attempt_row(e) for e in group], {"state": state.value}, ended)
        for state, group in by_attempt.items()
    ]
    writes += [
        Update(tasks, [end_task_row(e, now) for e in group], {"state": state.value}, moved)
        for state, group in by_task.items()
    ]
    writes.append(Insert(task_events, [end_event_row(e, now, new_id()) for e in ends]))
    return writes


def eager_writes(
    now: datetime, leases: Sequence[LeaseWrite], offer_claims: Sequence[tuple[str, str]]
) -> list[Write]:
    """New tasks leased in their own submit transaction (eager dispatch): the tasks' rows as a
    lease round leaves them (LEASED, revision + 1, one lease), their attempts, and the claims
    (offer id, task id) of other processes' offers. Their LEASED events are
    `lease_event_rows`, written with the submits' acceptance events."""
    if not leases:
        return []
    leased = [_leased_task_row(lease, now) for lease in leases]
    writes: list[Write] = [
        Insert(tasks, leased),
        Insert(task_attempts, [lease_attempt_row(lease, now) for lease in leases]),
    ]
    if offer_claims:
        writes.append(offers.claims(offer_claims, now))
    return writes


def _leased_task_row(lease: LeaseWrite, now: datetime) -> dict[str, Any]:
    task = lease.task
    check_transition(task.state, TaskState.LEASED)
    return {
        **task_row(task),
        "state": TaskState.LEASED.value,
        "revision": task.revision + 1,
        "lease_count": 1,
        "current_attempt_id": lease.attempt_id,
        "updated_at": now,
    }

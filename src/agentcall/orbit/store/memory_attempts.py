"""The in-memory twin's engine transaction (`AttemptTransaction` of `agentcall.orbit.store.ports`):
the same reads and conditional writes as the SQL store, on a `MemoryState` copy that the
twin commits when the transaction ends. Eligibility is the pure rule the SQL predicate
mirrors (`agentcall.orbit.domain.leasing.is_eligible`); rows are built by the same pure builders
(`agentcall.orbit.domain.transitions`); every write is conditional on the state it was read in and
raises `ConcurrentChange` otherwise."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

from agentcall.orbit.domain.attempts import AttemptState, TaskErrorCode, TaskFacts
from agentcall.orbit.domain.evidence import MAX_EVIDENCE_ITEMS, EvidenceItem
from agentcall.orbit.domain.flow_settings import MAX_PRIORITY
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.jsonvalue import dumps
from agentcall.orbit.domain.lease_order import lease_order
from agentcall.orbit.domain.leasing import HandlerKey, LeaseCandidate, WorkerOffer, is_eligible
from agentcall.orbit.domain.states import TaskState, check_transition
from agentcall.orbit.domain.task import Task
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
from agentcall.orbit.domain.worker_errors import EvidenceConflict, EvidenceLimit
from agentcall.orbit.store.memory_state import MemoryState, Row
from agentcall.orbit.store.ports import HeartbeatRow, Leasable, WaitingPastDeadline

_LIVE = (AttemptState.LEASED.value, AttemptState.RUNNING.value)


class MemoryTransaction:
    """One write transaction of the twin on `state` (its working copy). `clock` is the
    twin's clock, read by `clocked_lease_candidates` and `clocked_load_attempts` as their SQL
    statements read the database's. The `commit` of a write changes nothing here: the twin
    commits when the transaction ends."""

    def __init__(self, state: MemoryState, clock: Callable[[], datetime]) -> None:
        self.state = state
        self.clock = clock

    # ------------------------------------------------------------------ leasing
    async def lease_candidates(
        self, queue_id: str, handlers: Iterable[HandlerKey], now: datetime, limit: int
    ) -> list[Leasable]:
        offer = WorkerOffer(frozenset({queue_id}), frozenset(handlers))
        ready = [t for t in self.state.tasks.values() if is_eligible(_candidate(t), offer, now)]
        ready.sort(key=lambda task: (lease_order(task.available_at, task.flow.priority), task.id))
        return [Leasable(t, self.state.lease_counts.get(t.id, 0)) for t in ready[: max(0, limit)]]

    async def clocked_lease_candidates(
        self, queue_id: str, handlers: Iterable[HandlerKey], limit: int
    ) -> tuple[datetime | None, list[Leasable]]:
        now = self.clock()
        found = await self.lease_candidates(queue_id, handlers, now, limit)
        return (now, found) if found else (None, [])

    async def write_leases(
        self, now: datetime, leases: Sequence[LeaseWrite], *, commit: bool = False
    ) -> None:
        for lease in leases:
            task = lease.task
            values: Row = {
                "state": TaskState.LEASED.value,
                "revision": task.revision + 1,
                "updated_at": now,
                "current_attempt_id": lease.attempt_id,
            }
            self.state.move_task(task.id, TaskState.WAITING, task.revision, values)
            self.state.lease_counts[task.id] = self.state.lease_counts.get(task.id, 0) + 1
            if lease.attempt_id in self.state.attempts:
                raise ValueError(f"attempt {lease.attempt_id} exists already")
            self.state.attempts[lease.attempt_id] = lease_attempt_row(lease, now)
            self.state.add_event(lease_event_row(task, lease.attempt_id, now, new_id()))

    # ------------------------------------------------------------------ attempts
    async def load_attempts(self, attempt_ids: Sequence[str]) -> dict[str, LiveAttempt]:
        found = {}
        for attempt_id in attempt_ids:
            row = self.state.attempts.get(attempt_id)
            if row is not None:
                found[attempt_id] = self._live(row)
        return found

    async def clocked_load_attempts(
        self, attempt_ids: Sequence[str]
    ) -> tuple[datetime | None, dict[str, LiveAttempt]]:
        found = await self.load_attempts(attempt_ids)
        return (self.clock(), found) if found else (None, {})

    async def write_starts(
        self, now: datetime, starts: Sequence[StartWrite], *, commit: bool = False
    ) -> None:
        for start in starts:
            live = start.live
            task = self.state.tasks[live.task_id]
            self.state.move_attempt(
                live.id,
                AttemptState.LEASED,
                {
                    "state": AttemptState.RUNNING.value,
                    "started_at": now,
                    "last_heartbeat_at": now,
                    "lease_expires_at": start.lease_expires_at,
                },
            )
            values: Row = {
                "state": TaskState.RUNNING.value,
                "revision": live.task_revision + 1,
                "attempt_count": task.attempt_count + 1,
                "updated_at": now,
            }
            self.state.move_task(live.task_id, TaskState.LEASED, live.task_revision, values)
            self.state.add_event(start_event_row(start, now, new_id()))

    async def write_ends(
        self, now: datetime, ends: Sequence[EndWrite], *, commit: bool = False
    ) -> None:
        for end in ends:
            check_transition(end.live.task_state, end.outcome.task_state)
        for end in ends:
            live = end.live
            self.state.move_attempt(live.id, live.state, {**end_attempt_row(end), "ended_at": now})
            values: Row = {
                **end_task_row(end, now),
                "revision": live.task_revision + 1,
                "updated_at": now,
                "current_attempt_id": None,
            }
            self.state.move_task(live.task_id, live.task_state, live.task_revision, values)
            self.state.add_event(end_event_row(end, now, new_id()))

    # ------------------------------------------------------------------ leases
    async def heartbeat_rows(self, attempt_ids: Sequence[str]) -> list[HeartbeatRow]:
        rows = []
        for attempt_id in attempt_ids:
            row = self.state.attempts.get(attempt_id)
            if row is None:
                continue
            task = self.state.tasks[row["task_id"]]
            rows.append(
                HeartbeatRow(
                    row["id"],
                    AttemptState(row["state"]),
                    row["lease_token_sha256"],
                    row["namespace_id"],
                    row["queue_id"],
                    row["lease_expires_at"],
                    row["attempt_deadline_at"],
                    task.cancel_requested_at is not None,
                )
            )
        return rows

    async def renew_leases(
        self,
        attempt_ids: Sequence[str],
        now: datetime,
        renewed: datetime,
        rebind_to: str | None = None,
    ) -> None:
        """Only leases still running at `now` are renewed, as the SQL statement does."""
        for attempt_id in attempt_ids:
            row = self.state.attempts.get(attempt_id)
            if row is None or row["state"] not in _LIVE or row["lease_expires_at"] <= now:
                continue
            row["lease_expires_at"] = min(renewed, row["attempt_deadline_at"])
            row["last_heartbeat_at"] = now
            if rebind_to is not None:
                row["connection_id"] = rebind_to

    async def shorten_leases(self, connection_id: str, cut: datetime) -> None:
        for row in self.state.attempts.values():
            held = row["connection_id"] == connection_id and row["state"] in _LIVE
            if held and row["lease_expires_at"] > cut:
                row["lease_expires_at"] = cut

    async def expired_attempts(self, now: datetime, limit: int) -> list[LiveAttempt]:
        rows = [
            row
            for row in self.state.attempts.values()
            if row["state"] in _LIVE and row["lease_expires_at"] <= now
        ]
        rows.sort(key=lambda row: row["lease_expires_at"])
        return [self._live(row) for row in rows[: max(0, limit)]]

    # ------------------------------------------------------------------ WAITING deadlines
    async def expired_waiting(self, now: datetime, limit: int) -> list[WaitingPastDeadline]:
        waiting = [t for t in self.state.tasks.values() if t.state is TaskState.WAITING]
        past_deadline = sorted(
            (t for t in waiting if t.deadline_at <= now), key=lambda t: t.deadline_at
        )[: max(0, limit)]
        past_start = sorted(
            (t for t in waiting if t.start_deadline_at is not None and t.start_deadline_at <= now),
            key=lambda t: t.start_deadline_at or now,
        )[: max(0, limit)]
        unique = {t.id: t for t in [*past_deadline, *past_start]}
        return [
            WaitingPastDeadline(t.id, t.revision, t.queue_id, t.start_deadline_at, t.deadline_at)
            for t in unique.values()
        ]

    async def fail_waiting(
        self, now: datetime, task: WaitingPastDeadline, code: TaskErrorCode
    ) -> bool:
        stored = self.state.tasks.get(task.id)
        if stored is None or stored.state is not TaskState.WAITING:
            return False
        if stored.revision != task.revision:
            return False
        check_transition(TaskState.WAITING, TaskState.FAILED)
        values: Row = {
            "state": TaskState.FAILED.value,
            "revision": task.revision + 1,
            "updated_at": now,
            "completed_at": now,
            "error_code": code.value,
            "error_message": ERROR_MESSAGES[code],
        }
        self.state.move_task(task.id, TaskState.WAITING, task.revision, values)
        detail = dumps({"reason": code.value, "error_code": code.value})
        moved = (TaskState.WAITING, TaskState.FAILED)
        event = event_row(task.id, task.revision + 1, "FAILED", *moved, detail, now, new_id())
        self.state.add_event(event)
        return True

    # ------------------------------------------------------------------ evidence, offers
    async def check_evidence(
        self, live: LiveAttempt, items: Sequence[EvidenceItem]
    ) -> list[EvidenceItem]:
        known = {item.key: item.digest for item, _ in self.state.evidence.get(live.id, [])}
        fresh = []
        for item in items:
            stored = known.get(item.key)
            if stored is None:
                fresh.append(item)
            elif stored != item.digest:
                raise EvidenceConflict(f"evidence key {item.key!r} was recorded with other content")
        if live.evidence_count + len(fresh) > MAX_EVIDENCE_ITEMS:
            raise EvidenceLimit(f"an attempt holds at most {MAX_EVIDENCE_ITEMS} evidence items")
        return fresh

    async def insert_evidence(
        self, live: LiveAttempt, items: Sequence[EvidenceItem], now: datetime
    ) -> None:
        if not items:
            return
        stored = self.state.evidence.setdefault(live.id, [])
        known = {item.key for item, _ in stored}
        for item in items:
            if item.key in known:  # the table is unique on (attempt, key)
                raise EvidenceConflict(f"evidence key {item.key!r} is stored already")
            known.add(item.key)
            stored.append((item, now))
        self.state.attempts[live.id]["evidence_count"] = len(stored)

    async def withdraw_offer(self, offer_id: str) -> bool:
        offer = self.state.offers.get(offer_id)
        if offer is None or offer.task_id is not None:
            return False
        del self.state.offers[offer_id]
        return True

    # ------------------------------------------------------------------ rows
    def _live(self, row: Row) -> LiveAttempt:
        task = self.state.tasks[row["task_id"]]
        requested = task.cancel_requested_at is not None
        return LiveAttempt(
            id=row["id"],
            task_id=task.id,
            namespace_id=row["namespace_id"],
            queue_id=row["queue_id"],
            number=row["number"],
            state=AttemptState(row["state"]),
            token_sha256=row["lease_token_sha256"],
            connection_id=row["connection_id"],
            lease_expires_at=row["lease_expires_at"],
            attempt_deadline_at=row["attempt_deadline_at"],
            started_at=row.get("started_at"),
            end_reason=row.get("end_reason"),
            end_digest=row.get("end_digest"),
            evidence_count=row["evidence_count"],
            task_state=task.state,
            task_revision=task.revision,
            task_cancel_requested=requested,
            facts=TaskFacts(
                recovery_safety=task.recovery_safety,
                retry=task.retry,
                attempt_count=task.attempt_count,
                deadline_at=task.deadline_at,
                start_deadline_at=task.start_deadline_at,
                cancel_requested=requested,
            ),
            lease_rank=MAX_PRIORITY - task.flow.priority,
        )


def _candidate(task: Task) -> LeaseCandidate:
    return LeaseCandidate(
        task.state,
        task.queue_id,
        HandlerKey(task.handler, task.handler_version),
        task.available_at,
        task.start_deadline_at,
        task.deadline_at,
        task.attempt_count,
        task.retry.max_attempts,
    )

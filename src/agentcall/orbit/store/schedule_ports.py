"""The schedule operations of the store (docs/orbit/schedules.md) as a Protocol over plain
values (`agentcall.orbit.domain.schedule_records`): the SQL store
(`agentcall.orbit.store.schedules`) and the in-memory twin
(`agentcall.orbit.store.memory_schedules`) implement it with the same semantics. Each
operation is its own transaction at the store's clock, read once (`now` passed to the
callbacks)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from agentcall.orbit.domain.canonical import Digest
from agentcall.orbit.domain.idempotency import Scope, StoredReceipt
from agentcall.orbit.domain.schedule_records import FiringRow, ScheduleRow

CREATE_OPERATION = "schedules.create"  # the idempotency records' operation of a create
NOT_FOUND = "schedule not found"

Build = Callable[[datetime], tuple[ScheduleRow, str]]
Change = Callable[[ScheduleRow, datetime], ScheduleRow]


@dataclass(frozen=True, slots=True)
class Created:
    """The create's receipt: the first one (status 201, the schedule's JSON as created), or
    for a replay of its key with the same digest that stored receipt, `deduplicated`."""

    receipt: StoredReceipt
    deduplicated: bool


class ScheduleStore(Protocol):
    async def now(self) -> datetime:
        """The store's clock (the database clock), aware UTC."""
        ...

    async def create(self, scope: Scope, digest: Digest, build: Build) -> Created:
        """A new schedule `build(now)` returns (row, receipt text), with the key's
        idempotency record (the task submits' records, operation `schedules.create`, the
        schedule's id in place of a task's), both or neither. A key already used answers its
        stored receipt when `digest` matches, else `IdempotencyConflict`; `build` is not
        called then."""
        ...

    async def get(self, schedule_id: str) -> ScheduleRow | None: ...

    async def page(
        self,
        namespace_id: str,
        queue_ids: Collection[str],
        state: str | None,
        after_id: str | None,
        limit: int,
    ) -> list[ScheduleRow]:
        """Up to `limit` schedules of the namespace whose queue is one of `queue_ids` (and
        in `state` if given), by id ascending, strictly after `after_id` (keyset)."""
        ...

    async def update(self, schedule_id: str, expected_revision: int, change: Change) -> ScheduleRow:
        """Replace the schedule with `change(current, now)` at revision + 1 (updated at
        `now`) if it is at `expected_revision`: `NotFound` when there is none (also when
        `change` raises it), `StateConflict` at another revision."""
        ...

    async def delete(self, schedule_id: str, expected_revision: int | None) -> None:
        """Delete the schedule and its firing records (at `expected_revision` if given:
        `StateConflict` otherwise); `NotFound` when there is none. Its tasks stay."""
        ...

    async def insert_firing(self, firing: FiringRow) -> tuple[FiringRow, bool]:
        """Record a firing: (the record, True) when it is new; when the schedule already
        has one for (schedule, kind, nominal_at), (that record, False) and nothing is
        written."""
        ...

    async def list_firings(self, schedule_id: str, limit: int) -> list[FiringRow]:
        """The schedule's latest `limit` firing records, newest first (by fired_at, id)."""
        ...

    async def last_firings(self, schedule_ids: Sequence[str]) -> dict[str, FiringRow]:
        """The newest firing record of each schedule named that has one."""
        ...

"""The in-memory twin of the schedule store (`ScheduleStore` of
`agentcall.orbit.store.schedule_ports`) beside a `MemoryStore`: the same clock, and a
create's key among that store's idempotency records (a replay answers the first receipt,
other content raises `IdempotencyConflict`), written in one of its transactions together with
the schedule. Every write is checked first and applied last, so a refused one changes
nothing; firing records are unique per (schedule, kind, slot) as in the database."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from datetime import datetime

from agentcall.orbit.domain.canonical import Digest
from agentcall.orbit.domain.errors import NotFound, StateConflict
from agentcall.orbit.domain.idempotency import Scope, StoredReceipt, check_replay
from agentcall.orbit.domain.schedule_records import FiringRow, ScheduleRow
from agentcall.orbit.store.memory import MemoryStore
from agentcall.orbit.store.schedule_ports import NOT_FOUND, Build, Change, Created, ScheduleStore

Slot = tuple[str, str, datetime]


class MemorySchedules:
    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.schedules: dict[str, ScheduleRow] = {}
        self.firings: dict[Slot, FiringRow] = {}

    async def now(self) -> datetime:
        return self.store.clock()

    async def create(self, scope: Scope, digest: Digest, build: Build) -> Created:
        async with self.store.transaction() as (tx, now):
            stored = await tx.find_receipt(scope)
            if stored is not None:
                return Created(check_replay(stored, digest), True)
            row, text = build(now)
            receipt = StoredReceipt(digest, 201, text)
            if row.id in self.schedules:
                raise KeyError(f"schedule {row.id} exists")
            await tx.insert_receipt(scope, row.id, receipt, now)
            self.schedules[row.id] = row
        return Created(receipt, False)

    async def get(self, schedule_id: str) -> ScheduleRow | None:
        return self.schedules.get(schedule_id)

    async def page(
        self,
        namespace_id: str,
        queue_ids: Collection[str],
        state: str | None,
        after_id: str | None,
        limit: int,
    ) -> list[ScheduleRow]:
        rows = sorted(
            (
                row
                for row in self.schedules.values()
                if row.namespace_id == namespace_id
                and row.queue_id in queue_ids
                and (state is None or row.state == state)
                and (after_id is None or row.id > after_id)
            ),
            key=lambda row: row.id,
        )
        return rows[:limit]

    def _checked(self, schedule_id: str, expected_revision: int | None) -> ScheduleRow:
        row = self.schedules.get(schedule_id)
        if row is None:
            raise NotFound(NOT_FOUND)
        if expected_revision is not None and row.revision != expected_revision:
            raise StateConflict(f"the schedule is at revision {row.revision}; GET it first")
        return row

    async def update(self, schedule_id: str, expected_revision: int, change: Change) -> ScheduleRow:
        current = self._checked(schedule_id, expected_revision)
        now = self.store.clock()
        done = replace(change(current, now), revision=current.revision + 1, updated_at=now)
        self.schedules[schedule_id] = done
        return done

    async def delete(self, schedule_id: str, expected_revision: int | None) -> None:
        self._checked(schedule_id, expected_revision)
        del self.schedules[schedule_id]
        for slot in [slot for slot in self.firings if slot[0] == schedule_id]:
            del self.firings[slot]

    async def insert_firing(self, firing: FiringRow) -> tuple[FiringRow, bool]:
        if firing.schedule_id not in self.schedules:
            raise KeyError(f"schedule {firing.schedule_id} does not exist")  # the foreign key
        slot = (firing.schedule_id, firing.kind, firing.nominal_at)
        existing = self.firings.get(slot)
        if existing is not None:
            return existing, False
        self.firings[slot] = firing
        return firing, True

    async def list_firings(self, schedule_id: str, limit: int) -> list[FiringRow]:
        mine = [row for row in self.firings.values() if row.schedule_id == schedule_id]
        mine.sort(key=lambda row: (row.fired_at, row.id), reverse=True)
        return mine[:limit]

    async def last_firings(self, schedule_ids: Sequence[str]) -> dict[str, FiringRow]:
        found: dict[str, FiringRow] = {}
        for schedule_id in schedule_ids:
            rows = await self.list_firings(schedule_id, 1)
            if rows:
                found[schedule_id] = rows[0]
        return found


def conforms(store: MemoryStore) -> ScheduleStore:
    """`MemorySchedules` is a `ScheduleStore` (mypy checks it here)."""
    return MemorySchedules(store)

"""The in-memory twin of `ScheduleClaims` (`agentcall.orbit.store.schedule_claim_ports`)
over a `MemorySchedules`: the same conditions at the twin's clock, a claim's token in
`claimed_by`, releases only of the claim's own schedule at the revision claimed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.schedule_plan import ScheduleState
from agentcall.orbit.domain.schedule_records import FiringRow, ScheduleRow
from agentcall.orbit.store.memory_schedules import MemorySchedules
from agentcall.orbit.store.schedule_claim_ports import Claimed, Release, ScheduleClaims


def _free(row: ScheduleRow, now: datetime) -> bool:
    return row.claim_until is None or row.claim_until <= now


def _due_at(row: ScheduleRow) -> datetime | None:
    if row.buffered_at is not None:
        return row.claim_until or row.buffered_at
    if row.next_fire_at is None:
        return None
    if row.claim_until is not None and row.claim_until > row.next_fire_at:
        return row.claim_until
    return row.next_fire_at


class MemoryScheduleClaims:
    def __init__(self, schedules: MemorySchedules) -> None:
        self.schedules = schedules

    async def claim_due(self, limit: int, lease: timedelta) -> Claimed:
        now = self.schedules.store.clock()
        rows = self.schedules.schedules
        due = [
            row
            for row in rows.values()
            if row.state == ScheduleState.ACTIVE.value
            and _free(row, now)
            and (
                row.buffered_at is not None
                or (row.next_fire_at is not None and row.next_fire_at <= now)
            )
        ]
        due.sort(key=lambda row: (row.next_fire_at is None, row.next_fire_at or now))
        token = new_id()
        claimed = []
        for row in due[:limit]:
            rows[row.id] = replace(row, claimed_by=token, claim_until=now + lease)
            claimed.append(rows[row.id])
        return Claimed(now, tuple(claimed))

    async def earliest_due(self) -> tuple[datetime, datetime | None]:
        now = self.schedules.store.clock()
        times = [
            at
            for row in self.schedules.schedules.values()
            if row.state == ScheduleState.ACTIVE.value and (at := _due_at(row)) is not None
        ]
        return now, min(times, default=None)

    async def finish(self, firings: Sequence[FiringRow], releases: Sequence[Release]) -> int:
        rows = self.schedules.schedules
        for firing in firings:
            if firing.schedule_id in rows:
                await self.schedules.insert_firing(firing)
        released = 0
        for release in releases:
            row = rows.get(release.schedule_id)
            if row is None or row.claimed_by != release.claimed_by:
                continue
            if row.revision != release.revision:
                rows[row.id] = replace(row, claimed_by=None, claim_until=None)
                continue
            rows[row.id] = replace(
                row,
                next_fire_at=release.next_fire_at,
                last_task_id=release.last_task_id,
                buffered_at=release.buffered_at,
                claimed_by=None,
                claim_until=release.hold_until,
            )
            released += 1
        return released


def conforms(schedules: MemorySchedules) -> ScheduleClaims:
    """`MemoryScheduleClaims` is a `ScheduleClaims` (mypy checks it here)."""
    return MemoryScheduleClaims(schedules)

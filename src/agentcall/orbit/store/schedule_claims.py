"""`ScheduleClaims` (`agentcall.orbit.store.schedule_claim_ports`) on SQLite and
MySQL/MariaDB: each call one short transaction at the database clock, retried on transient
failures, its statements the named ones of `schedules.sql` run by the store's connector
(`agentcall.orbit.store.connector`: the driver connection on MySQL/MariaDB). A claim takes
its rows locked and skips the rows another claimer holds (`SKIP LOCKED`; SQLite's single
writer is alone), so processes claiming at once get disjoint batches; no lock outlives a
transaction, so a submit made while a schedule is claimed never waits on it.

What each call costs, whatever the number of schedules (docs/orbit/schedule-firing.md):
`claim_due` reads a range of `ix_schedules_due` up to now (and, when that is not a full
batch, `ix_schedules_buffered`), then claims with one UPDATE sent with the COMMIT;
`earliest_due` is one statement of three indexed MIN lookups; `finish` locks the batch's
schedules with one SELECT, then sends every firing record as one multi-row INSERT, every
release as one UPDATE and the COMMIT in one round trip. A slot has one record: only a claim
writes `scheduled` records, each under its schedule's row lock, so the batch's records are
new unless a claim that lapsed wrote them; the INSERT then fails on the slot's unique key
and the finish runs again leaving out the slots recorded already."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa

from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.schedule_plan import ScheduleState
from agentcall.orbit.domain.schedule_records import FiringRow, ScheduleRow
from agentcall.orbit.store.connector import HotConnection, commit_with, fetch
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.schedule_claim_ports import Claimed, Release, ScheduleClaims
from agentcall.orbit.store.sql import Insert, Update, Write
from agentcall.orbit.store.tables import schedule_firings, schedules

s = schedules.c
_ACTIVE = s.state == ScheduleState.ACTIVE.value


def _earliest(now: datetime) -> sa.Select[Any]:
    """When an active schedule next becomes due and free, as three indexed lookups: the
    first cursor after now; the claims and holds of the schedules already reached (those
    being fired, or held for a jittered slot); the buffered slots' holds."""
    ahead = sa.select(sa.func.min(s.next_fire_at)).where(_ACTIVE, s.next_fire_at > now)
    later = sa.case((s.claim_until > s.next_fire_at, s.claim_until), else_=s.next_fire_at)
    held = sa.select(sa.func.min(sa.type_coerce(later, s.next_fire_at.type)))
    held = held.where(_ACTIVE, s.next_fire_at <= now)
    buffered_at = sa.func.coalesce(s.claim_until, s.buffered_at)
    kept = sa.select(sa.func.min(buffered_at)).where(s.buffered_at.is_not(None), _ACTIVE)
    return sa.select(ahead.scalar_subquery(), held.scalar_subquery(), kept.scalar_subquery())


class SqlScheduleClaims:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def claim_due(self, limit: int, lease: timedelta) -> Claimed:
        async def once() -> Claimed:
            async with self.db.hot_write() as conn:
                return await _claim(self.db, conn, limit, lease)

        return await self.db.retrying(once)

    async def earliest_due(self) -> tuple[datetime, datetime | None]:
        async def once() -> tuple[datetime, datetime | None]:
            async with self.db.single_read() as conn:
                now = await self.db.now(conn)
                times = (await conn.execute(_earliest(now))).one()
                return now, min((at for at in times if at is not None), default=None)

        return await self.db.retrying(once)

    async def finish(self, firings: Sequence[FiringRow], releases: Sequence[Release]) -> int:
        async def once() -> int | None:
            try:
                async with self.db.hot_write() as conn:
                    return await _finish(conn, firings, releases, recorded=False)
            except sa.exc.IntegrityError as exc:
                if self.db.is_duplicate(exc):
                    return None  # a lapsed claim recorded some of these slots already
                raise

        async def leaving_recorded_out() -> int:
            async with self.db.hot_write() as conn:
                return await _finish(conn, firings, releases, recorded=True)

        done = await self.db.retrying(once)
        return await self.db.retrying(leaving_recorded_out) if done is None else done


async def _claim(db: Database, conn: HotConnection, limit: int, lease: timedelta) -> Claimed:
    """The free due schedules, locked (the reached ones earliest first, then the buffered
    ones if the batch is not full), claimed by a new token until now + `lease`."""
    active = ScheduleState.ACTIVE.value
    found = await fetch(conn, "reached_schedules", {"active": active, "limit": limit})
    if len(found) < limit:
        more = {"active": active, "limit": limit - len(found)}
        taken = {row.id for row in found}
        found += [r for r in await fetch(conn, "buffered_schedules", more) if r.id not in taken]
    if not found:
        return Claimed(await db.now(conn), ())
    now = found[0].now_at
    token, until = new_id(), now + lease
    ids = [{"id": row.id} for row in found]
    claim: Write = Update(schedules, ids, static={"claimed_by": token, "claim_until": until})
    await commit_with(conn, [claim])  # the rows are locked: every one matches
    return Claimed(now, tuple(_claimed_row(row, token, until) for row in found))


def _claimed_row(found: Any, token: str, until: datetime) -> ScheduleRow:
    """A row of `reached_schedules` or `buffered_schedules` with its new claim."""
    return ScheduleRow(
        found.id, found.namespace_id, found.queue_id, found.revision, found.state, found.note,
        found.template, found.spec, found.start_at, found.end_at, found.jitter_ms,
        found.catchup_window_ms, found.overlap, found.next_fire_at, found.created_at,
        found.updated_at, token, until, found.last_task_id, found.buffered_at,
    )  # fmt: skip


async def _finish(
    conn: HotConnection,
    firings: Sequence[FiringRow],
    releases: Sequence[Release],
    recorded: bool,
) -> int:
    """Lock the batch's schedules (the primary key in order: two finishing processes never
    deadlock), so none is deleted or changed before the commit; then the records of those
    that exist (with `recorded`, less the slots that have a record), the releases whose
    claim and revision still hold, and the claims of the others dropped."""
    ids = sorted({one.schedule_id for one in firings} | {one.schedule_id for one in releases})
    if not ids:
        return 0
    locked = await fetch(conn, "claims_of_schedules", {"ids": ids})
    current = {row.id: (row.claimed_by, row.revision) for row in locked}
    new = _new_records([one for one in firings if one.schedule_id in current])
    if recorded and new:
        slots = [(one.schedule_id, one.kind, one.nominal_at) for one in new]
        found = await fetch(conn, "recorded_slots", {"slots": slots})
        known = {(row.schedule_id, row.kind, row.nominal_at) for row in found}
        new = [one for one in new if (one.schedule_id, one.kind, one.nominal_at) not in known]
    mine = [one for one in releases if current.get(one.schedule_id, (None,))[0] == one.claimed_by]
    kept = [one for one in mine if current[one.schedule_id][1] == one.revision]
    changed = [one.schedule_id for one in mine if current[one.schedule_id][1] != one.revision]
    writes: list[Write] = [Insert(schedule_firings, [_record(one) for one in new])]
    writes.append(Update(schedules, [_released(one) for one in kept]))
    if changed:  # changed meanwhile: the change decides the cursor; only the claim goes
        drop = {"claimed_by": None, "claim_until": None}
        writes.append(Update(schedules, [{"id": one} for one in changed], static=drop))
    await commit_with(conn, writes)  # the rows are locked: every UPDATE matches
    return len(kept)


def _new_records(firings: Sequence[FiringRow]) -> list[FiringRow]:
    """One record per slot (schedule, kind, nominal time): the first of each."""
    seen: set[tuple[str, str, datetime]] = set()
    kept = []
    for one in firings:
        slot = (one.schedule_id, one.kind, one.nominal_at)
        if slot not in seen:
            seen.add(slot)
            kept.append(one)
    return kept


def _record(one: FiringRow) -> dict[str, Any]:
    return {
        "id": one.id,
        "schedule_id": one.schedule_id,
        "nominal_at": one.nominal_at,
        "fired_at": one.fired_at,
        "kind": one.kind,
        "outcome": one.outcome,
        "task_id": one.task_id,
        "deduplicated": one.deduplicated,
        "slots": one.slots,
    }


def _released(one: Release) -> dict[str, Any]:
    return {
        "id": one.schedule_id,
        "next_fire_at": one.next_fire_at,
        "last_task_id": one.last_task_id,
        "buffered_at": one.buffered_at,
        "claim_until": one.hold_until,
        "claimed_by": None,
    }


def conforms(db: Database) -> ScheduleClaims:
    """`SqlScheduleClaims` is a `ScheduleClaims` (mypy checks it here)."""
    return SqlScheduleClaims(db)

"""`ScheduleClaims` (`agentcall.orbit.store.schedule_claim_ports`) on SQLite and
MySQL/MariaDB: each call one short transaction at the database clock, retried on transient
failures; a claim is a conditional UPDATE (no lock outlives its transaction, so a submit
made while a schedule is claimed never waits on it, and SQLite's single writer is free).

What each call costs, whatever the number of schedules (docs/orbit/schedule-firing.md):
`claim_due` reads index ranges only (`ix_schedules_due` on (state, next_fire_at) up to now,
and `ix_schedules_buffered` for the buffered slots), then claims with one UPDATE and reads
the claimed rows back; `earliest_due` is one statement of three indexed MIN lookups;
`finish` locks the batch's schedules with one SELECT, writes every firing record with one
multi-row INSERT and every release with one prepared UPDATE over the batch."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.schedule_plan import ScheduleState
from agentcall.orbit.domain.schedule_records import FiringRow
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.schedule_claim_ports import Claimed, Release, ScheduleClaims
from agentcall.orbit.store.schedules import insert_firings, schedule_row
from agentcall.orbit.store.tables import schedules

s = schedules.c
_ACTIVE = s.state == ScheduleState.ACTIVE.value


def _free(now: datetime) -> sa.ColumnElement[bool]:
    return sa.or_(s.claim_until.is_(None), s.claim_until <= now)


def _claimable(now: datetime) -> tuple[sa.ColumnElement[bool], ...]:
    """Active, due (its cursor reached, or a slot buffered) and free (no claim, or a claim or
    hold that has passed)."""
    due = sa.or_(s.next_fire_at <= now, s.buffered_at.is_not(None))
    return _ACTIVE, due, _free(now)


def _due_ids(now: datetime, limit: int) -> tuple[sa.Select[Any], sa.Select[Any]]:
    """The buffered schedules that are free (a range of `ix_schedules_buffered`: few rows),
    and the free schedules whose cursor is reached, earliest first (a range of
    `ix_schedules_due` up to now, stopped at `limit`)."""
    buffered = sa.select(s.id, s.next_fire_at).where(s.buffered_at.is_not(None), _ACTIVE)
    buffered = buffered.where(_free(now)).limit(limit)
    reached = sa.select(s.id, s.next_fire_at).where(_ACTIVE, s.next_fire_at <= now, _free(now))
    return buffered, reached.order_by(s.next_fire_at).limit(limit)


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
            async with self.db.single_read() as conn:  # no write lock while nothing is due
                now = await self.db.now(conn)
                found: dict[str, datetime | None] = {}
                for query in _due_ids(now, limit):
                    found.update((row[0], row[1]) for row in await conn.execute(query))
            if not found:
                return Claimed(now, ())
            ids = sorted(found, key=lambda one: (found[one] is None, found[one] or now, one))
            ids = ids[:limit]
            async with self.db.write() as conn:
                now = await self.db.now(conn)
                token = new_id()
                claim = schedules.update().where(s.id.in_(ids), *_claimable(now))
                await conn.execute(claim.values(claimed_by=token, claim_until=now + lease))
                mine = sa.select(schedules).where(s.id.in_(ids), s.claimed_by == token)
                rows = [schedule_row(row) for row in await conn.execute(mine)]
            order = {one: index for index, one in enumerate(ids)}
            return Claimed(now, tuple(sorted(rows, key=lambda row: order[row.id])))

        return await self.db.retrying(once)

    async def earliest_due(self) -> tuple[datetime, datetime | None]:
        async def once() -> tuple[datetime, datetime | None]:
            async with self.db.single_read() as conn:
                now = await self.db.now(conn)
                times = (await conn.execute(_earliest(now))).one()
                return now, min((at for at in times if at is not None), default=None)

        return await self.db.retrying(once)

    async def finish(self, firings: Sequence[FiringRow], releases: Sequence[Release]) -> int:
        async def once() -> int:
            async with self.db.write() as conn:
                return await _finish(conn, firings, releases)

        return await self.db.retrying(once)


async def _finish(
    conn: AsyncConnection, firings: Sequence[FiringRow], releases: Sequence[Release]
) -> int:
    """Lock the batch's schedules (in id order: two finishing processes never deadlock), so
    none is deleted or changed before the commit; then the records of those that exist, the
    releases whose claim and revision still hold, and the claims of the others dropped."""
    ids = sorted({one.schedule_id for one in firings} | {one.schedule_id for one in releases})
    if not ids:
        return 0
    query = sa.select(s.id, s.claimed_by, s.revision).where(s.id.in_(ids)).with_for_update()
    current = {row[0]: (row[1], row[2]) for row in await conn.execute(query)}
    await insert_firings(conn, [one for one in firings if one.schedule_id in current])
    mine = [one for one in releases if current.get(one.schedule_id, (None,))[0] == one.claimed_by]
    kept = [one for one in mine if current[one.schedule_id][1] == one.revision]
    changed = [one.schedule_id for one in mine if current[one.schedule_id][1] != one.revision]
    await _release(conn, kept)
    if changed:  # changed meanwhile: the change decides the cursor; only the claim goes
        drop = schedules.update().where(s.id.in_(changed))
        await conn.execute(drop.values(claimed_by=None, claim_until=None))
    return len(kept)


_RELEASE = (
    schedules.update()
    .where(s.id == sa.bindparam("b_id"))
    .values(
        next_fire_at=sa.bindparam("b_next", type_=s.next_fire_at.type),
        last_task_id=sa.bindparam("b_last", type_=s.last_task_id.type),
        buffered_at=sa.bindparam("b_buffered", type_=s.buffered_at.type),
        claim_until=sa.bindparam("b_hold", type_=s.claim_until.type),
        claimed_by=None,
    )
)


async def _release(conn: AsyncConnection, releases: Sequence[Release]) -> None:
    """Every release of the batch as one prepared UPDATE run over the batch's parameters
    (their claims and revisions checked under the lock)."""
    if not releases:
        return
    params = [
        {
            "b_id": one.schedule_id,
            "b_next": one.next_fire_at,
            "b_last": one.last_task_id,
            "b_buffered": one.buffered_at,
            "b_hold": one.hold_until,
        }
        for one in releases
    ]
    await conn.execute(_RELEASE, params)


def conforms(db: Database) -> ScheduleClaims:
    """`SqlScheduleClaims` is a `ScheduleClaims` (mypy checks it here)."""
    return SqlScheduleClaims(db)

"""Schedules in the database (`ScheduleStore` of `agentcall.orbit.store.schedule_ports`) on
SQLite or MySQL/MariaDB: tables `schedules` and `schedule_firings`, each operation one
transaction at the database clock, retried on transient failures. A create's key is an
idempotency record like a submit's (`agentcall.orbit.store.idempotency`), written in the
schedule's transaction. A firing record is written with the dialect's insert-or-ignore on
its unique (schedule, kind, slot), so a second record of a slot is never a second row,
whichever process writes it; the functions taking a connection run inside a caller's
transaction."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import asdict, replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.canonical import Digest
from agentcall.orbit.domain.errors import NotFound, StateConflict
from agentcall.orbit.domain.idempotency import Scope, StoredReceipt, check_replay
from agentcall.orbit.domain.schedule_records import FiringRow, ScheduleRow
from agentcall.orbit.store import idempotency
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.schedule_ports import NOT_FOUND, Build, Change, Created, ScheduleStore
from agentcall.orbit.store.tables import schedule_firings, schedules

s = schedules.c
f = schedule_firings.c
_TEXT = {"template_text": "template", "spec_text": "spec"}  # row field -> column
_COLUMNS = {column: field for field, column in _TEXT.items()}


def schedule_values(row: ScheduleRow) -> dict[str, Any]:
    return {_TEXT.get(name, name): value for name, value in asdict(row).items()}


def schedule_row(found: Any) -> ScheduleRow:
    return ScheduleRow(**{_COLUMNS.get(k, k): v for k, v in found._mapping.items()})


def firing_row(found: Any) -> FiringRow:
    values = dict(found._mapping)
    values["deduplicated"] = bool(values["deduplicated"])
    return FiringRow(**values)


async def load(
    conn: AsyncConnection, schedule_id: str, *, lock: bool = False
) -> ScheduleRow | None:
    query = sa.select(schedules).where(s.id == schedule_id)
    found = (await conn.execute(query.with_for_update() if lock else query)).first()
    return None if found is None else schedule_row(found)


async def write_row(conn: AsyncConnection, row: ScheduleRow, expected_revision: int) -> None:
    """The row replaces the stored one if that is still at `expected_revision`."""
    values = schedule_values(row)
    del values["id"]
    query = schedules.update().where(s.id == row.id, s.revision == expected_revision)
    if (await conn.execute(query.values(**values))).rowcount != 1:
        raise StateConflict("the schedule changed concurrently; GET it and decide again")


async def insert_firings(conn: AsyncConnection, firings: Sequence[FiringRow]) -> None:
    """One multi-row INSERT of firing records; a slot that has its record already keeps it."""
    if not firings:
        return
    values = [asdict(one) for one in firings]
    if conn.dialect.name in ("mysql", "mariadb"):
        query: Any = mysql.insert(schedule_firings).values(values)
        query = query.on_duplicate_key_update(id=f.id)  # an existing slot: no change
    else:
        query = sqlite.insert(schedule_firings).values(values).on_conflict_do_nothing()
    await conn.execute(query)


async def insert_firing(conn: AsyncConnection, firing: FiringRow) -> tuple[FiringRow, bool]:
    """`ScheduleStore.insert_firing` inside the caller's transaction."""
    await insert_firings(conn, [firing])
    slot = (f.schedule_id == firing.schedule_id, f.kind == firing.kind)
    found = await conn.execute(
        sa.select(schedule_firings).where(*slot, f.nominal_at == firing.nominal_at)
    )
    stored = firing_row(found.one())
    return stored, stored.id == firing.id


def _checked(row: ScheduleRow | None, expected_revision: int | None) -> ScheduleRow:
    if row is None:
        raise NotFound(NOT_FOUND)
    if expected_revision is not None and row.revision != expected_revision:
        raise StateConflict(f"the schedule is at revision {row.revision}; GET it first")
    return row


class SqlSchedules:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def now(self) -> datetime:
        async def once() -> datetime:
            async with self.db.single_read() as conn:
                return await self.db.now(conn)

        return await self.db.retrying(once)

    async def create(self, scope: Scope, digest: Digest, build: Build) -> Created:
        async def once() -> Created:
            async with self.db.write() as conn:
                stored = await idempotency.find(conn, scope)
                if stored is not None:
                    return Created(check_replay(stored, digest), True)
                now = await self.db.now(conn)
                row, text = build(now)
                receipt = StoredReceipt(digest, 201, text)
                await idempotency.insert(conn, scope, digest, row.id, receipt, now)
                await conn.execute(schedules.insert().values(**schedule_values(row)))
                return Created(receipt, False)

        def replay(stored: StoredReceipt) -> Created:
            return Created(check_replay(stored, digest), True)

        return await idempotency.replaying(self.db, once, scope, replay)

    async def get(self, schedule_id: str) -> ScheduleRow | None:
        async def once() -> ScheduleRow | None:
            async with self.db.single_read() as conn:
                return await load(conn, schedule_id)

        return await self.db.retrying(once)

    async def page(
        self,
        namespace_id: str,
        queue_ids: Collection[str],
        state: str | None,
        after_id: str | None,
        limit: int,
    ) -> list[ScheduleRow]:
        if not queue_ids:
            return []
        query = sa.select(schedules).where(
            s.namespace_id == namespace_id, s.queue_id.in_(sorted(queue_ids))
        )
        if state is not None:
            query = query.where(s.state == state)
        if after_id is not None:
            query = query.where(s.id > after_id)
        query = query.order_by(s.id).limit(limit)

        async def once() -> list[ScheduleRow]:
            async with self.db.single_read() as conn:
                return [schedule_row(found) for found in await conn.execute(query)]

        return await self.db.retrying(once)

    async def update(self, schedule_id: str, expected_revision: int, change: Change) -> ScheduleRow:
        async def once() -> ScheduleRow:
            async with self.db.write() as conn:
                current = _checked(await load(conn, schedule_id, lock=True), expected_revision)
                now = await self.db.now(conn)
                done = replace(change(current, now), revision=current.revision + 1, updated_at=now)
                await write_row(conn, done, expected_revision)
                return done

        return await self.db.retrying(once)

    async def delete(self, schedule_id: str, expected_revision: int | None) -> None:
        async def once() -> None:
            async with self.db.write() as conn:
                _checked(await load(conn, schedule_id, lock=True), expected_revision)
                await conn.execute(schedule_firings.delete().where(f.schedule_id == schedule_id))
                await conn.execute(schedules.delete().where(s.id == schedule_id))

        await self.db.retrying(once)

    async def insert_firing(self, firing: FiringRow) -> tuple[FiringRow, bool]:
        async def once() -> tuple[FiringRow, bool]:
            async with self.db.write() as conn:
                return await insert_firing(conn, firing)

        return await self.db.retrying(once)

    async def list_firings(self, schedule_id: str, limit: int) -> list[FiringRow]:
        query = (
            sa.select(schedule_firings)
            .where(f.schedule_id == schedule_id)
            .order_by(f.fired_at.desc(), f.id.desc())
            .limit(limit)
        )

        async def once() -> list[FiringRow]:
            async with self.db.single_read() as conn:
                return [firing_row(found) for found in await conn.execute(query)]

        return await self.db.retrying(once)

    async def last_firings(self, schedule_ids: Sequence[str]) -> dict[str, FiringRow]:
        if not schedule_ids:
            return {}
        newest = schedule_firings.alias("newest")
        latest = (
            sa.select(newest.c.id)
            .where(newest.c.schedule_id == f.schedule_id)
            .order_by(newest.c.fired_at.desc(), newest.c.id.desc())
            .limit(1)
            .scalar_subquery()
        )
        query = sa.select(schedule_firings).where(
            f.schedule_id.in_(sorted(set(schedule_ids))), f.id == latest
        )

        async def once() -> dict[str, FiringRow]:
            async with self.db.single_read() as conn:
                rows = [firing_row(found) for found in await conn.execute(query)]
            return {row.schedule_id: row for row in rows}

        return await self.db.retrying(once)


def conforms(db: Database) -> ScheduleStore:
    """`SqlSchedules` is a `ScheduleStore` (mypy checks it here)."""
    return SqlSchedules(db)

"""Claims of due schedules on SQLite, MariaDB and the in-memory twin: a claim takes the
active, due, free schedules (earliest first, up to a limit) and no other claimer gets them
while the lease lasts, nor do claimers at once; `finish` records each slot
once (a slot a lapsed claim recorded keeps that record) and releases only its own claim at
the revision claimed; an expired lease lets another claimer in and the late release writes
nothing; the earliest due time counts holds and leases."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import pytest

from agentcall.orbit.domain.canonical import digest
from agentcall.orbit.domain.idempotency import Scope
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.schedule_records import FiringRow, ScheduleRow
from agentcall.orbit.domain.tokens import generate_secret
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.memory import ManualClock, MemoryStore
from agentcall.orbit.store.memory_schedule_claims import MemoryScheduleClaims
from agentcall.orbit.store.memory_schedules import MemorySchedules
from agentcall.orbit.store.schedule_claim_ports import Release, ScheduleClaims
from agentcall.orbit.store.schedule_claims import SqlScheduleClaims
from agentcall.orbit.store.schedule_ports import CREATE_OPERATION, ScheduleStore
from agentcall.orbit.store.schedules import SqlSchedules

pytestmark = pytest.mark.integration

LEASE = timedelta(seconds=30)
S = timedelta(seconds=1)


@dataclass
class Tenant:
    store: ScheduleStore
    claims: ScheduleClaims
    namespace_id: str
    queue_id: str

    async def create(self, next_fire_at: datetime | None, **fields: object) -> ScheduleRow:
        made: list[ScheduleRow] = []

        def build(now: datetime) -> tuple[ScheduleRow, str]:
            values: dict[str, object] = {
                "id": new_id(),
                "namespace_id": self.namespace_id,
                "queue_id": self.queue_id,
                "revision": 1,
                "state": "active",
                "note": None,
                "template_text": "{}",
                "spec_text": '{"interval_ms":1000,"anchor_at":"2026-01-01T00:00:00Z"}',
                "start_at": None,
                "end_at": None,
                "jitter_ms": 0,
                "catchup_window_ms": 300_000,
                "overlap": "allow",
                "next_fire_at": next_fire_at,
                "created_at": now,
                "updated_at": now,
                **fields,
            }
            made.append(ScheduleRow(**values))  # type: ignore[arg-type]
            return made[0], "{}"

        scope = Scope(self.namespace_id, CREATE_OPERATION, "", new_id())
        await self.store.create(scope, digest(CREATE_OPERATION, {}), build)
        return made[0]

    async def claim(self, limit: int = 100, lease: timedelta = LEASE) -> list[ScheduleRow]:
        claimed = await self.claims.claim_due(limit, lease)
        return [row for row in claimed.rows if row.namespace_id == self.namespace_id]


def firing(schedule_id: str, at: datetime) -> FiringRow:
    return FiringRow(new_id(), schedule_id, at, at, "scheduled", "fired", new_id(), False)


def release(row: ScheduleRow, next_fire_at: datetime | None, **fields: object) -> Release:
    values: dict[str, object] = {
        "schedule_id": row.id,
        "claimed_by": row.claimed_by,
        "revision": row.revision,
        "next_fire_at": next_fire_at,
        "last_task_id": None,
        "buffered_at": None,
        "hold_until": None,
        **fields,
    }
    return Release(**values)  # type: ignore[arg-type]


@pytest.fixture
async def tenant(store_kind: tuple[str, str | None]) -> AsyncIterator[Tenant]:
    """A namespace of its own; on the shared SQL databases the schedules of other tests may
    be due too, so each test looks at its own namespace's claims only."""
    kind, url = store_kind
    name = f"c-{secrets.token_hex(4)}"
    if url is None:
        memory = MemoryStore(ManualClock(datetime(2026, 6, 1, tzinfo=UTC)))
        record = await memory.init(name, "q", generate_secret())
        schedules = MemorySchedules(memory)
        (queue_id,) = record.queue_ids
        yield Tenant(schedules, MemoryScheduleClaims(schedules), record.namespace_id, queue_id)
        return
    db = Database.open(url, pool_size=4)
    made = await Admin(db).init(name, "q")
    yield Tenant(SqlSchedules(db), SqlScheduleClaims(db), made.namespace_id, made.queue_id)
    await db.close()


async def test_a_claim_takes_due_active_free_schedules_earliest_first(tenant: Tenant) -> None:
    now = await tenant.store.now()
    late = await tenant.create(now - 2 * S)
    early = await tenant.create(now - 60 * S)
    await tenant.create(now + 3600 * S)  # not due
    await tenant.create(now - 60 * S, state="paused")
    await tenant.create(None)  # ended
    first = await tenant.claim(limit=1000)
    assert [row.id for row in first] == [early.id, late.id]
    assert all(row.claimed_by and row.claim_until and row.claim_until > now for row in first)
    assert await tenant.claim() == []  # claimed: nobody else gets them while the lease lasts


async def test_concurrent_claimers_never_share_a_schedule(tenant: Tenant) -> None:
    now = await tenant.store.now()
    made = {(await tenant.create(now - S)).id for _ in range(30)}
    taken: list[str] = []
    for _ in range(20):  # a claimer that lost the race to a row comes back with fewer
        rounds = await asyncio.gather(*(tenant.claim(limit=7) for _ in range(4)))
        taken += [row.id for claimed in rounds for row in claimed if row.id in made]
        if len(set(taken)) == len(made):
            break
    assert len(taken) == len(set(taken)) == len(made)


async def test_a_release_advances_the_cursor_and_records_each_slot_once(tenant: Tenant) -> None:
    now = await tenant.store.now()
    row = await tenant.create(now - S)
    (claimed,) = await tenant.claim()
    record = firing(row.id, now - S)
    task_id = new_id()
    done = release(claimed, now + S, last_task_id=task_id, hold_until=now + 2 * S)
    assert await tenant.claims.finish([record, replace(record, id=new_id())], [done]) == 1
    stored = await tenant.store.get(row.id)
    assert stored is not None
    assert (stored.next_fire_at, stored.last_task_id) == (now + S, task_id)
    assert (stored.claimed_by, stored.claim_until) == (None, now + 2 * S)
    assert [f.id for f in await tenant.store.list_firings(row.id, 10)] == [record.id]
    assert await tenant.claims.finish([], [done]) == 0  # the claim is gone: nothing written


async def test_a_schedule_changed_while_claimed_keeps_the_change(tenant: Tenant) -> None:
    now = await tenant.store.now()
    row = await tenant.create(now - S)
    (claimed,) = await tenant.claim()
    await tenant.store.update(
        row.id, 1, lambda current, at: replace(current, revision=2, next_fire_at=now + 99 * S)
    )
    assert await tenant.claims.finish([], [release(claimed, now + S)]) == 0
    stored = await tenant.store.get(row.id)
    assert stored is not None and stored.next_fire_at == now + 99 * S
    assert (stored.claimed_by, stored.claim_until) == (None, None)


async def test_an_expired_lease_lets_another_claimer_in(tenant: Tenant) -> None:
    now = await tenant.store.now()
    row = await tenant.create(now - S)
    (lapsed,) = await tenant.claim(lease=timedelta(0))
    (taken,) = await tenant.claim()
    assert taken.id == row.id and taken.claimed_by != lapsed.claimed_by
    assert await tenant.claims.finish([], [release(lapsed, now + 50 * S)]) == 0
    assert await tenant.claims.finish([], [release(taken, now + S)]) == 1
    stored = await tenant.store.get(row.id)
    assert stored is not None and stored.next_fire_at == now + S


async def test_a_slot_recorded_by_a_lapsed_claim_keeps_that_record(tenant: Tenant) -> None:
    now = await tenant.store.now()
    row = await tenant.create(now - S)
    (lapsed,) = await tenant.claim(lease=timedelta(0))
    (taken,) = await tenant.claim()
    first = firing(row.id, now - S)
    assert await tenant.claims.finish([first], [release(lapsed, now + 50 * S)]) == 0
    again, following = firing(row.id, now - S), firing(row.id, now)
    assert await tenant.claims.finish([again, following], [release(taken, now + S)]) == 1
    recorded = await tenant.store.list_firings(row.id, 10)
    assert sorted(f.id for f in recorded) == sorted([first.id, following.id])
    stored = await tenant.store.get(row.id)
    assert stored is not None and (stored.next_fire_at, stored.claimed_by) == (now + S, None)


async def test_firings_of_a_deleted_schedule_are_dropped(tenant: Tenant) -> None:
    now = await tenant.store.now()
    gone = await tenant.create(now - S)
    kept = await tenant.create(now - S)
    claimed = await tenant.claim()
    await tenant.store.delete(gone.id, None)
    records = [firing(gone.id, now), firing(kept.id, now)]
    assert await tenant.claims.finish(records, [release(r, now + S) for r in claimed]) == 1
    assert len(await tenant.store.list_firings(kept.id, 10)) == 1


async def test_the_earliest_due_time_counts_holds_and_leases(tenant: Tenant) -> None:
    now = await tenant.store.now()
    held = await tenant.create(now - 10 * S)
    (claimed,) = await tenant.claim()
    await tenant.claims.finish([], [release(claimed, now - 10 * S, hold_until=now + 7 * S)])
    _, earliest = await tenant.claims.earliest_due()
    assert earliest is not None and earliest <= now + 7 * S
    assert await tenant.claim() == []  # held until then
    mine = await tenant.store.get(held.id)
    assert mine is not None and mine.claim_until == now + 7 * S

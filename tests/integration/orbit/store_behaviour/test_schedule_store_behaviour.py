"""The schedule store on SQLite, MariaDB and the in-memory twin: a create's key replays its
first receipt, keyset pages per namespace and queue, writes at the expected revision, delete
with its firing records, and one firing record per (schedule, kind, slot) however often and
however concurrently it is written."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import pytest

from agentcall.orbit.domain.canonical import digest
from agentcall.orbit.domain.errors import IdempotencyConflict, NotFound, StateConflict
from agentcall.orbit.domain.idempotency import Scope
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.schedule_records import FiringRow, ScheduleRow, with_state
from agentcall.orbit.domain.tokens import generate_secret
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.memory import ManualClock, MemoryStore
from agentcall.orbit.store.memory_schedules import MemorySchedules
from agentcall.orbit.store.schedule_ports import CREATE_OPERATION, ScheduleStore
from agentcall.orbit.store.schedules import SqlSchedules

pytestmark = pytest.mark.integration

SLOT = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@dataclass
class Tenant:
    store: ScheduleStore
    namespace_id: str
    queue_ids: list[str]

    def row(self, now: datetime, queue: int = 0, **fields: object) -> ScheduleRow:
        values: dict[str, object] = {
            "id": new_id(),
            "namespace_id": self.namespace_id,
            "queue_id": self.queue_ids[queue],
            "revision": 1,
            "state": "active",
            "note": None,
            "template_text": '{"handler":"demo.work"}',
            "spec_text": '{"cron":"* * * * *","time_zone":"UTC"}',
            "start_at": None,
            "end_at": None,
            "jitter_ms": 0,
            "catchup_window_ms": 300_000,
            "overlap": "skip",
            "next_fire_at": now + timedelta(minutes=1),
            "created_at": now,
            "updated_at": now,
        }
        values.update(fields)
        return ScheduleRow(**values)  # type: ignore[arg-type]

    async def create(self, key: str | None = None, **fields: object) -> ScheduleRow:
        made: list[ScheduleRow] = []

        def build(now: datetime) -> tuple[ScheduleRow, str]:
            made.append(self.row(now, **fields))
            return made[0], f'{{"id":"{made[0].id}"}}'

        scope = Scope(self.namespace_id, CREATE_OPERATION, "", key or new_id())
        await self.store.create(scope, digest(CREATE_OPERATION, {"n": 1}), build)
        return made[0]


@pytest.fixture
async def tenant(store_kind: tuple[str, str | None]) -> AsyncIterator[Tenant]:
    kind, url = store_kind
    name = f"s-{secrets.token_hex(4)}"
    if url is None:
        memory = MemoryStore(ManualClock(datetime(2026, 6, 1, tzinfo=UTC)))
        record = await memory.init(name, "q", generate_secret())
        other = await memory.add_queue(record.namespace_id, "r")
        yield Tenant(MemorySchedules(memory), record.namespace_id, [*record.queue_ids, other])
        return
    db = Database.open(url, pool_size=4)
    made = await Admin(db).init(name, "q")
    other = await Admin(db).create_queue(made.namespace_id, "r")
    yield Tenant(SqlSchedules(db), made.namespace_id, [made.queue_id, other])
    await db.close()


def firing(
    schedule_id: str, kind: str = "scheduled", at: datetime = SLOT, **fields: object
) -> FiringRow:
    values: dict[str, object] = {
        "id": new_id(),
        "schedule_id": schedule_id,
        "nominal_at": at,
        "fired_at": at + timedelta(milliseconds=5),
        "kind": kind,
        "outcome": "fired",
        "task_id": new_id(),
        "deduplicated": False,
    }
    values.update(fields)
    return FiringRow(**values)  # type: ignore[arg-type]


async def test_a_created_schedule_reads_back_whole_at_revision_one(tenant: Tenant) -> None:
    row = await tenant.create(note="nightly", start_at=SLOT, jitter_ms=250)
    stored = await tenant.store.get(row.id)
    assert stored == row
    assert stored.revision == 1 and stored.note == "nightly" and stored.start_at == SLOT
    assert await tenant.store.get(new_id()) is None


async def test_a_create_key_replays_its_first_receipt_and_refuses_other_content(
    tenant: Tenant,
) -> None:
    scope = Scope(tenant.namespace_id, CREATE_OPERATION, "", "nightly-report")
    body = digest(CREATE_OPERATION, {"n": 1})
    built: list[ScheduleRow] = []

    def build(now: datetime) -> tuple[ScheduleRow, str]:
        built.append(tenant.row(now))
        return built[-1], f'{{"id":"{built[-1].id}"}}'

    first = await tenant.store.create(scope, body, build)
    again = await tenant.store.create(scope, body, build)
    assert (first.deduplicated, again.deduplicated) == (False, True)
    assert first.receipt.status == 201
    assert again.receipt == first.receipt
    assert len(built) == 1  # a replay builds nothing
    with pytest.raises(IdempotencyConflict):
        await tenant.store.create(scope, digest(CREATE_OPERATION, {"n": 2}), build)
    listed = await tenant.store.page(tenant.namespace_id, tenant.queue_ids, None, None, 10)
    assert [row.id for row in listed] == [built[0].id]


async def test_pages_walk_the_namespace_by_id_within_the_queues_asked(tenant: Tenant) -> None:
    rows = [await tenant.create(queue=n % 2) for n in range(5)]
    paused = await tenant.create(state="paused")
    ids = sorted(row.id for row in [*rows, paused])
    seen: list[str] = []
    after = None
    while True:
        page = await tenant.store.page(tenant.namespace_id, tenant.queue_ids, None, after, 2)
        seen += [row.id for row in page]
        if len(page) < 2:
            break
        after = page[-1].id
    assert seen == ids
    first_queue = {row.id for row in [*rows, paused] if row.queue_id == tenant.queue_ids[0]}
    only = await tenant.store.page(tenant.namespace_id, tenant.queue_ids[:1], None, None, 10)
    assert {row.id for row in only} == first_queue
    states = await tenant.store.page(tenant.namespace_id, tenant.queue_ids, "paused", None, 10)
    assert [row.id for row in states] == [paused.id]
    assert await tenant.store.page(new_id(), tenant.queue_ids, None, None, 10) == []
    assert await tenant.store.page(tenant.namespace_id, [], None, None, 10) == []


async def test_an_update_applies_at_the_expected_revision_only(tenant: Tenant) -> None:
    row = await tenant.create()
    done = await tenant.store.update(row.id, 1, lambda cur, now: replace(cur, jitter_ms=900))
    assert (done.revision, done.jitter_ms) == (2, 900)
    assert done.updated_at >= row.updated_at
    assert await tenant.store.get(row.id) == done
    with pytest.raises(StateConflict, match="revision 2"):
        await tenant.store.update(row.id, 1, lambda cur, now: replace(cur, jitter_ms=1))
    with pytest.raises(NotFound):
        await tenant.store.update(new_id(), 1, lambda cur, now: cur)
    stored = await tenant.store.get(row.id)
    assert stored is not None and stored.jitter_ms == 900


async def test_a_refused_change_writes_nothing(tenant: Tenant) -> None:
    row = await tenant.create()

    def refuse(current: ScheduleRow, now: datetime) -> ScheduleRow:
        raise NotFound("schedule not found")

    with pytest.raises(NotFound):
        await tenant.store.update(row.id, 1, refuse)
    assert await tenant.store.get(row.id) == row


def no_next(current: ScheduleRow, now: datetime) -> None:
    return None


def state_change(
    state: str, note: str | None, next_fire_at: Callable[[ScheduleRow, datetime], datetime | None]
) -> Callable[[ScheduleRow, datetime], ScheduleRow]:
    """Pause or resume as the use case does: `update` with `domain.schedule_records.with_state`."""
    return lambda current, now: with_state(current, now, state, note, next_fire_at)


async def test_pause_and_resume_set_state_note_and_next_time_and_drop_the_claim(
    tenant: Tenant,
) -> None:
    row = await tenant.create(claimed_by="server-a", claim_until=SLOT, buffered_at=SLOT)
    paused = await tenant.store.update(row.id, 1, state_change("paused", "maintenance", no_next))
    assert (paused.state, paused.note, paused.next_fire_at, paused.revision) == (
        "paused",
        "maintenance",
        None,
        2,
    )
    assert (paused.claimed_by, paused.claim_until, paused.buffered_at) == (None, None, None)
    resumed = await tenant.store.update(
        row.id, 2, state_change("active", None, lambda current, now: now + timedelta(seconds=30))
    )
    assert resumed.state == "active" and resumed.note is None and resumed.revision == 3
    assert resumed.next_fire_at is not None and resumed.next_fire_at > resumed.updated_at
    with pytest.raises(StateConflict):
        await tenant.store.update(row.id, 2, state_change("paused", None, no_next))


async def test_delete_takes_the_firing_records_with_it_at_the_expected_revision(
    tenant: Tenant,
) -> None:
    row = await tenant.create()
    kept = await tenant.create()
    await tenant.store.insert_firing(firing(row.id))
    await tenant.store.insert_firing(firing(kept.id))
    with pytest.raises(StateConflict):
        await tenant.store.delete(row.id, 7)
    await tenant.store.delete(row.id, 1)
    assert await tenant.store.get(row.id) is None
    assert await tenant.store.list_firings(row.id, 10) == []
    with pytest.raises(NotFound):
        await tenant.store.delete(row.id, None)
    await tenant.store.delete(kept.id, None)
    assert await tenant.store.get(kept.id) is None


async def test_a_slot_has_one_firing_record_per_kind_the_first_one(tenant: Tenant) -> None:
    row = await tenant.create()
    first = firing(row.id)
    stored, new = await tenant.store.insert_firing(first)
    assert (stored, new) == (first, True)
    again, new = await tenant.store.insert_firing(firing(row.id, outcome="skipped_overlap"))
    assert (again, new) == (first, False)
    trigger, new = await tenant.store.insert_firing(firing(row.id, "trigger", outcome="triggered"))
    assert new and trigger.kind == "trigger"
    assert len(await tenant.store.list_firings(row.id, 10)) == 2


async def test_concurrent_writers_of_one_slot_leave_one_record(tenant: Tenant) -> None:
    row = await tenant.create()
    results = await asyncio.gather(*(tenant.store.insert_firing(firing(row.id)) for _ in range(6)))
    assert sum(new for _, new in results) == 1
    assert len({stored.id for stored, _ in results}) == 1
    assert len(await tenant.store.list_firings(row.id, 10)) == 1


async def test_firings_list_newest_first_and_the_last_of_each_schedule(tenant: Tenant) -> None:
    row = await tenant.create()
    other = await tenant.create()
    slots = [SLOT + timedelta(minutes=n) for n in range(4)]
    made = [firing(row.id, at=at) for at in slots]
    for item in made:
        await tenant.store.insert_firing(item)
    missed = firing(row.id, at=SLOT - timedelta(hours=1), outcome="missed", task_id=None, slots=40)
    missed = replace(missed, fired_at=slots[-1] + timedelta(seconds=1))
    await tenant.store.insert_firing(missed)
    listed = await tenant.store.list_firings(row.id, 3)
    assert listed == [missed, made[3], made[2]]
    assert listed[0].slots == 40 and listed[0].task_id is None
    last = await tenant.store.last_firings([row.id, other.id, new_id()])
    assert last == {row.id: missed}
    assert await tenant.store.last_firings([]) == {}

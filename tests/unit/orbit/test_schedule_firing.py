"""Firing one slot of a schedule (agentcall.orbit.usecases.schedule_firing) over the in-memory
twin: the task goes through the ordinary submit with the slot's key, so a slot fired twice
(or backfilled after it fired) gives one task and one record per kind, and a trigger's key is
its request's own."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from agentcall.orbit.domain.idempotency import Scope
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.jsonvalue import dumps
from agentcall.orbit.domain.schedule_plan import FiringKind, idempotency_key
from agentcall.orbit.domain.schedule_records import ScheduleRow
from agentcall.orbit.domain.strictjson import read_json
from agentcall.orbit.domain.submit import (
    OPERATION,
    SubmitRequest,
    parse_submit,
    submit_digest,
    submit_document,
)
from agentcall.orbit.domain.tokens import Principal, authenticate, generate_secret
from agentcall.orbit.store.group_plan import PendingSubmit
from agentcall.orbit.store.memory import ManualClock, MemoryStore
from agentcall.orbit.store.memory_schedules import MemorySchedules
from agentcall.orbit.store.receipts import Receipt
from agentcall.orbit.usecases.schedule_firing import Slot, fire_slot, trigger_key

pytestmark = pytest.mark.unit

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class Twin:
    def __init__(self) -> None:
        self.clock = ManualClock(T0)
        self.store = MemoryStore(self.clock)
        self.schedules = MemorySchedules(self.store)
        self.keys: list[str] = []

    async def submit(
        self, principal: Principal, request: SubmitRequest, key: str, request_id: str
    ) -> Receipt:
        self.keys.append(key)
        scope = Scope(principal.namespace_id, OPERATION, "", key)
        item = PendingSubmit(principal, request, scope, submit_digest(request), request_id)
        return await self.store.submit(item)

    async def schedule(self) -> ScheduleRow:
        record = await self.store.init("ns", "q", generate_secret())
        principal = authenticate(record, T0)
        (queue_id,) = principal.queue_ids
        body = {
            "queue_id": queue_id,
            "handler": "demo.work",
            "handler_version": "v1",
            "payload_version": "v1",
            "payload": {"n": 1},
        }
        template = dumps(submit_document(parse_submit(read_json(json.dumps(body).encode()))))
        row = ScheduleRow(
            new_id(), principal.namespace_id, queue_id, 1, "active", None, template,
            '{"interval_ms":1000,"anchor_at":"2026-03-01T09:00:00Z"}', None, None, 0,
            300_000, "allow", T0, T0, T0,
        )  # fmt: skip
        self.schedules.schedules[row.id] = row
        return row


async def test_a_slot_fired_twice_submits_one_task_under_the_slot_key() -> None:
    twin = Twin()
    schedule = await twin.schedule()
    slot = Slot(schedule, FiringKind.SCHEDULED, T0 + timedelta(seconds=5))
    first = await fire_slot(twin.submit, twin.schedules, slot, T0, "r1")
    again = await fire_slot(twin.submit, twin.schedules, slot, T0 + timedelta(seconds=1), "r2")
    assert twin.keys == [f"schedule:{schedule.id}:2026-03-01T09:00:05Z"] * 2
    assert twin.keys[0] == idempotency_key(schedule.id, slot.nominal_at)
    assert (first.deduplicated, again.deduplicated) == (False, True)
    assert first.firing == again.firing
    assert (first.firing.outcome, first.firing.kind) == ("fired", "scheduled")
    task = await twin.store.load_task(first.firing.task_id or "")
    assert task is not None and task.queue_id == schedule.queue_id
    assert len(await twin.schedules.list_firings(schedule.id, 10)) == 1


async def test_a_backfill_of_a_fired_slot_names_the_existing_task() -> None:
    twin = Twin()
    schedule = await twin.schedule()
    nominal = T0 + timedelta(seconds=3)
    fired = await fire_slot(
        twin.submit, twin.schedules, Slot(schedule, FiringKind.SCHEDULED, nominal), T0, "r1"
    )
    backfill = Slot(schedule, FiringKind.BACKFILL, nominal)
    filled = await fire_slot(twin.submit, twin.schedules, backfill, T0, "r2")
    assert filled.deduplicated and filled.firing.outcome == "backfilled"
    assert filled.firing.task_id == fired.firing.task_id
    assert len(await twin.schedules.list_firings(schedule.id, 10)) == 2


async def test_a_trigger_has_its_own_key_and_replays_with_the_same_request_key() -> None:
    twin = Twin()
    schedule = await twin.schedule()
    once = Slot(schedule, FiringKind.TRIGGER, T0, trigger_key="press-1")
    first = await fire_slot(twin.submit, twin.schedules, once, T0, "r1")
    twin.clock.advance(2000)
    later = T0 + timedelta(seconds=2)
    again = await fire_slot(twin.submit, twin.schedules, once, later, "r2")
    other = Slot(schedule, FiringKind.TRIGGER, later, trigger_key="press-2")
    second = await fire_slot(twin.submit, twin.schedules, other, later, "r3")
    assert twin.keys[0] == trigger_key(schedule.id, "press-1") != twin.keys[2]
    assert len(twin.keys[0]) <= 128 and twin.keys[0].startswith(f"schedule:{schedule.id}:")
    assert again.deduplicated and again.firing == first.firing
    assert first.firing.outcome == "triggered"
    assert T0 <= first.firing.nominal_at < later  # the task's creation time
    assert second.firing.task_id not in (None, first.firing.task_id)
    assert not second.deduplicated

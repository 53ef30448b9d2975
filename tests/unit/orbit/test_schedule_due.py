"""A batch of due schedules fired (agentcall.orbit.usecases.schedule_due) over the in-memory
twin (docs/orbit/schedule-firing.md, "Who fires", "Catch-up" and "Overlap"): the slots of
the whole batch go to the ordinary submit together, the oldest first, each under its slot
key; a `cancel_previous` slot is submitted after the slot before it, whose task it cancels;
a slot the submit refuses leaves its schedule as it was, looked at again later, and the
others of the batch fire; a batch fired again after its claim lapsed gives no second task."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from agentcall.orbit.domain.errors import InvalidArgument, OrbitError
from agentcall.orbit.domain.idempotency import Scope
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.jsonvalue import dumps
from agentcall.orbit.domain.schedule_plan import idempotency_key
from agentcall.orbit.domain.schedule_records import ScheduleRow
from agentcall.orbit.domain.strictjson import read_json
from agentcall.orbit.domain.submit import (
    OPERATION,
    SubmitRequest,
    parse_submit,
    submit_digest,
    submit_document,
)
from agentcall.orbit.domain.times import format_time
from agentcall.orbit.domain.tokens import Principal, generate_secret
from agentcall.orbit.store.group_plan import PendingSubmit
from agentcall.orbit.store.memory import ManualClock, MemoryStore
from agentcall.orbit.store.memory_schedule_claims import MemoryScheduleClaims
from agentcall.orbit.store.memory_schedules import MemorySchedules
from agentcall.orbit.store.receipts import Receipt
from agentcall.orbit.usecases.schedule_due import RETRY_AFTER, DueSchedules

pytestmark = pytest.mark.unit

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
S = timedelta(seconds=1)
Submits = Sequence[tuple[Principal, SubmitRequest, str, str]]


class Twin:
    def __init__(self) -> None:
        self.clock = ManualClock(T0)
        self.store = MemoryStore(self.clock)
        self.schedules = MemorySchedules(self.store)
        self.batches: list[list[str]] = []  # the keys of each submit_all call
        self.refused: set[str] = set()  # keys the submit refuses
        self.due = DueSchedules(
            MemoryScheduleClaims(self.schedules), self.store, self.submit_all, batch=10
        )

    async def submit_all(self, submits: Submits) -> list[Receipt | BaseException]:
        self.batches.append([key for _, _, key, _ in submits])
        answers: list[Receipt | BaseException] = []
        for principal, request, key, request_id in submits:
            if key in self.refused:
                answers.append(InvalidArgument("refused by the test", "queue_id"))
                continue
            scope = Scope(principal.namespace_id, OPERATION, "", key)
            item = PendingSubmit(principal, request, scope, submit_digest(request), request_id)
            try:
                answers.append(await self.store.submit(item))
            except OrbitError as exc:
                answers.append(exc)
        return answers

    async def every_second(self, next_fire_at: datetime, overlap: str = "allow") -> ScheduleRow:
        """An interval schedule every second from T0, its cursor given."""
        if not self.store.state.queues:
            await self.store.init("ns", "q", generate_secret())
        ((queue_id, (namespace_id, _)),) = self.store.state.queues.items()
        body = {
            "queue_id": queue_id,
            "handler": "demo.work",
            "handler_version": "v1",
            "payload_version": "v1",
            "payload": {},
        }
        template = dumps(submit_document(parse_submit(read_json(json.dumps(body).encode()))))
        spec = json.dumps({"interval_ms": 1000, "anchor_at": format_time(T0)})
        row = ScheduleRow(
            new_id(), namespace_id, queue_id, 1, "active", None, template, spec, None, None,
            0, 300_000, overlap, next_fire_at, T0, T0,
        )  # fmt: skip
        self.schedules.schedules[row.id] = row
        return row

    def stored(self, row: ScheduleRow) -> ScheduleRow:
        return self.schedules.schedules[row.id]


async def test_the_slots_of_a_batch_are_submitted_together_oldest_first() -> None:
    twin = Twin()
    behind = await twin.every_second(T0)  # slots T0, T0+1 s, T0+2 s due at T0+2 s
    ones = [await twin.every_second(T0 + 2 * S) for _ in range(2)]
    twin.clock.advance(2000)
    assert await twin.due.fire_due() == 3
    (keys,) = twin.batches
    assert keys[:2] == [idempotency_key(behind.id, T0), idempotency_key(behind.id, T0 + S)]
    assert sorted(keys[2:]) == sorted(
        [idempotency_key(row.id, T0 + 2 * S) for row in [behind, *ones]]
    )
    records = await twin.schedules.list_firings(behind.id, 10)
    assert sorted(f.nominal_at for f in records) == [T0, T0 + S, T0 + 2 * S]
    assert {f.outcome for f in records} == {"fired"}
    for row in [behind, *ones]:
        stored = twin.stored(row)
        assert (stored.next_fire_at, stored.claimed_by) == (T0 + 3 * S, None)
    assert twin.stored(behind).last_task_id == next(
        f.task_id for f in records if f.nominal_at == T0 + 2 * S
    )
    assert await twin.due.fire_due() == 0  # nothing due until T0+3 s


async def test_a_cancel_previous_slot_is_submitted_after_the_slot_before_it() -> None:
    twin = Twin()
    row = await twin.every_second(T0, overlap="cancel_previous")
    other = await twin.every_second(T0 + 2 * S)
    twin.clock.advance(2000)
    assert await twin.due.fire_due() == 2
    first, *rest = twin.batches
    assert first == [idempotency_key(row.id, T0), idempotency_key(other.id, T0 + 2 * S)]
    assert rest == [[idempotency_key(row.id, T0 + S)], [idempotency_key(row.id, T0 + 2 * S)]]
    tasks = {f.nominal_at: f.task_id for f in await twin.schedules.list_firings(row.id, 10)}
    states = [twin.store.state.tasks[tasks[T0 + n * S] or ""].state.value for n in range(3)]
    assert states == ["CANCELLED", "CANCELLED", "WAITING"]


async def test_a_refused_slot_leaves_its_schedule_for_later_and_the_others_fire() -> None:
    twin = Twin()
    refused = await twin.every_second(T0)
    fired = await twin.every_second(T0)
    twin.refused.add(idempotency_key(refused.id, T0))
    assert await twin.due.fire_due() == 2
    kept = twin.stored(refused)
    assert kept.next_fire_at == T0 and kept.claim_until is not None
    assert timedelta(0) <= kept.claim_until - (T0 + RETRY_AFTER) < timedelta(milliseconds=1)
    assert await twin.schedules.list_firings(refused.id, 10) == []
    assert twin.stored(fired).next_fire_at == T0 + S
    assert len(await twin.schedules.list_firings(fired.id, 10)) == 1


async def test_a_batch_fired_again_after_its_claim_lapsed_gives_no_second_task() -> None:
    twin = Twin()
    row = await twin.every_second(T0)
    claimed = await twin.due.claim()
    await twin.due.fire(claimed)  # fired and released
    twin.schedules.schedules[row.id] = replace(twin.stored(row), next_fire_at=T0)
    assert await twin.due.fire_due() == 1  # the slot again, as after a lapsed claim
    (record,) = await twin.schedules.list_firings(row.id, 10)
    assert not record.deduplicated  # the slot keeps its first record
    assert len(twin.store.state.tasks) == 1
    assert twin.batches == [[idempotency_key(row.id, T0)]] * 2

"""Fire one slot of a schedule (docs/orbit/schedules.md): submit its task template through the
ordinary submit use case with the slot's idempotency key, then record the firing.

A scheduled or backfilled slot's key is `schedule:<id>:<nominal time, RFC 3339 UTC>`, the same
in every server process, so a slot tried twice (two processes, a process killed between the
submit and the record, a replayed backfill) gives one task: the second submit replays the
first and its firing says `deduplicated`. A trigger's key is made from the request's own
`Idempotency-Key` (`trigger_key`); its firing's nominal time is its task's creation time, so
the same trigger sent again answers the same firing.

The task is submitted on behalf of the schedule: a principal of the schedule's namespace
allowed to submit to the template's queue only, whose token id is the schedule's id (the
task's audit row names the schedule)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Protocol

from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.schedule_plan import FiringKind, FiringOutcome, idempotency_key
from agentcall.orbit.domain.schedule_records import FiringRow, ScheduleRow
from agentcall.orbit.domain.strictjson import read_json
from agentcall.orbit.domain.submit import SubmitRequest, parse_submit
from agentcall.orbit.domain.times import parse_time
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store.receipts import Receipt

Submit = Callable[[Principal, SubmitRequest, str, str], Awaitable[Receipt]]
# several submits (principal, request, key, request ID) at once, answered in order, a refused
# or failed one as its exception (`Submits.submit_all`)
SubmitAll = Callable[
    [Sequence[tuple[Principal, SubmitRequest, str, str]]],
    Awaitable[list[Receipt | BaseException]],
]

_OUTCOME = {
    FiringKind.SCHEDULED: FiringOutcome.FIRED,
    FiringKind.BACKFILL: FiringOutcome.BACKFILLED,
    FiringKind.TRIGGER: FiringOutcome.TRIGGERED,
}


class FiringLog(Protocol):
    async def insert_firing(self, firing: FiringRow) -> tuple[FiringRow, bool]:
        """(the record, True) when new; (the slot's existing record, False) otherwise."""
        ...


@dataclass(frozen=True, slots=True)
class Slot:
    """What to fire: a schedule's nominal slot (scheduled or backfill), or a trigger with the
    request's idempotency key (`nominal_at` is then ignored)."""

    schedule: ScheduleRow
    kind: FiringKind
    nominal_at: datetime
    trigger_key: str | None = None


@dataclass(frozen=True, slots=True)
class Fired:
    """The slot's firing record; `deduplicated`: the slot's key had a task already (or the
    slot had a record already), so nothing new was submitted."""

    firing: FiringRow
    deduplicated: bool


def schedule_principal(schedule: ScheduleRow) -> Principal:
    """Who submits a schedule's tasks: the schedule itself, for its queue only."""
    return Principal(
        schedule.id,
        schedule.namespace_id,
        frozenset({Permission.SUBMIT, Permission.CANCEL, Permission.READ}),
        frozenset({schedule.queue_id}),
    )


def template_request(schedule: ScheduleRow) -> SubmitRequest:
    """The submit every firing of the schedule makes (its template, checked when written)."""
    return _template(schedule.template_text)


@lru_cache(maxsize=4096)
def _template(text: str) -> SubmitRequest:
    """Parsed once per template text (requests are immutable, so the slots share one)."""
    return parse_submit(read_json(text.encode()))


def trigger_key(schedule_id: str, request_key: str) -> str:
    """A trigger's task key: the request's key digested, so any 1-128 character key fits."""
    digest = hashlib.sha256(request_key.encode()).hexdigest()
    return f"schedule:{schedule_id}:trigger:{digest}"


def slot_key(slot: Slot) -> str:
    if slot.kind is FiringKind.TRIGGER:
        if slot.trigger_key is None:
            raise ValueError("a trigger needs the request's idempotency key")
        return trigger_key(slot.schedule.id, slot.trigger_key)
    return idempotency_key(slot.schedule.id, slot.nominal_at)


@dataclass(frozen=True, slots=True)
class Submitted:
    """The slot's task; `nominal_at` is the slot's (a trigger's: its task's creation time)."""

    task_id: str
    nominal_at: datetime
    deduplicated: bool


async def submit_slot(submit: Submit, slot: Slot, request_id: str) -> Submitted:
    """Submit the slot's task (`submit` is `Submits.submit`) under the slot's key."""
    schedule = slot.schedule
    receipt = await submit(
        schedule_principal(schedule), template_request(schedule), slot_key(slot), request_id
    )
    return submitted_of(slot, receipt)


def submitted_of(slot: Slot, receipt: Receipt) -> Submitted:
    """What the submit of the slot's task answered."""
    task = json.loads(receipt.task_text)
    nominal_at = slot.nominal_at
    if slot.kind is FiringKind.TRIGGER:
        nominal_at = parse_time(task["created_at"], "created_at")
    return Submitted(task["id"], nominal_at, receipt.deduplicated)


def firing_of(slot: Slot, submitted: Submitted, fired_at: datetime) -> FiringRow:
    """The firing record of a submitted slot."""
    outcome = _OUTCOME[slot.kind].value
    return FiringRow(
        new_id(),
        slot.schedule.id,
        submitted.nominal_at,
        fired_at,
        slot.kind.value,
        outcome,
        submitted.task_id,
        submitted.deduplicated,
    )


async def fire_slot(
    submit: Submit, firings: FiringLog, slot: Slot, now: datetime, request_id: str
) -> Fired:
    """Submit the slot's task (`submit` is `Submits.submit`) and record its firing at `now`."""
    submitted = await submit_slot(submit, slot, request_id)
    record, new = await firings.insert_firing(firing_of(slot, submitted, now))
    return Fired(record, submitted.deduplicated or not new)

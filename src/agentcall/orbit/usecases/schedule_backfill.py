"""`POST /v1/schedules/{id}:backfill`: fire the nominal slots of a past range [from, to)
inside the schedule's start/end, at most `MAX_BACKFILL_SLOTS` (1000; a longer range is
refused, split it), in order, each through `fire_slot` with its ordinary slot key: a slot
that fired already gives no second task (its firing says `deduplicated` and names the task).
`preview` answers the slots and fires nothing. Paused or not, whatever the overlap policy.
Needs schedules:write and the schedule in the token's scope. A slot whose key holds a task
submitted under another template (the schedule was changed since) is refused with
IDEMPOTENCY_CONFLICT; the slots before it have fired, and a backfill of the same range again
fires nothing twice."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.schedule_plan import FiringKind, slots_between
from agentcall.orbit.domain.schedule_records import FiringRow
from agentcall.orbit.domain.schedule_request import MAX_BACKFILL_SLOTS, parse_backfill
from agentcall.orbit.domain.schedule_view import bounds_of, spec_of
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store.schedule_ports import ScheduleStore
from agentcall.orbit.usecases.schedule_access import visible_schedule
from agentcall.orbit.usecases.schedule_firing import Slot, Submit, fire_slot


@dataclass(frozen=True, slots=True)
class Backfilled:
    """The range's slots and, unless previewed, their firing records in the same order."""

    slots: list[datetime]
    firings: list[FiringRow]


async def backfill_schedule(
    store: ScheduleStore,
    submit: Submit,
    principal: Principal,
    schedule_id: str,
    body: JsonValue,
    request_id: str,
) -> Backfilled:
    row = await visible_schedule(store, principal, schedule_id, Permission.SCHEDULES_WRITE)
    now = await store.now()
    wanted = parse_backfill(body, now)
    spec, bounds = spec_of(row), bounds_of(row)
    slots = slots_between(spec, wanted.start, wanted.end, bounds, MAX_BACKFILL_SLOTS + 1)
    if len(slots) > MAX_BACKFILL_SLOTS:
        raise InvalidArgument(
            f"the range holds more than {MAX_BACKFILL_SLOTS} slots; backfill it in parts", "to"
        )
    if wanted.preview:
        return Backfilled(slots, [])
    firings = []
    for nominal_at in slots:
        slot = Slot(row, FiringKind.BACKFILL, nominal_at)
        firings.append((await fire_slot(submit, store, slot, now, request_id)).firing)
    return Backfilled(slots, firings)

"""`POST /v1/schedules/{id}:trigger`: one extra firing now, beside the nominal slots and
whatever the state or overlap policy, through `fire_slot` with a task key made from the
request's `Idempotency-Key`: the same trigger sent again answers the same firing and task
(`deduplicated`). Needs schedules:write and the schedule in the token's scope."""

from __future__ import annotations

from agentcall.orbit.domain.idempotency import check_key
from agentcall.orbit.domain.schedule_plan import FiringKind
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store.schedule_ports import ScheduleStore
from agentcall.orbit.usecases.schedule_access import visible_schedule
from agentcall.orbit.usecases.schedule_firing import Fired, Slot, Submit, fire_slot


async def trigger_schedule(
    store: ScheduleStore,
    submit: Submit,
    principal: Principal,
    schedule_id: str,
    key: str | None,
    request_id: str,
) -> Fired:
    checked = check_key(key)  # the caller's own mistake, whether or not the schedule exists
    row = await visible_schedule(store, principal, schedule_id, Permission.SCHEDULES_WRITE)
    now = await store.now()
    slot = Slot(row, FiringKind.TRIGGER, now, checked)
    return await fire_slot(submit, store, slot, now, request_id)

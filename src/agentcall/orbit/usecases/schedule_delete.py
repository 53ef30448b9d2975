"""`DELETE /v1/schedules/{id}`: the schedule and its firing records go (at
`expected_revision` if given, else STATE_CONFLICT); the tasks it submitted stay. Needs
schedules:write and the schedule in the token's scope."""

from __future__ import annotations

from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store.schedule_ports import ScheduleStore
from agentcall.orbit.usecases.schedule_access import visible_schedule


async def delete_schedule(
    store: ScheduleStore, principal: Principal, schedule_id: str, expected_revision: int | None
) -> None:
    await visible_schedule(store, principal, schedule_id, Permission.SCHEDULES_WRITE)
    await store.delete(schedule_id, expected_revision)

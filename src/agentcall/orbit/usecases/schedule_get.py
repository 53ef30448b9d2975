"""`GET /v1/schedules/{id}`: one schedule with its newest firing. Needs schedules:read and
the schedule in the token's scope."""

from __future__ import annotations

from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store.schedule_ports import ScheduleStore
from agentcall.orbit.usecases.schedule_access import ScheduleRead, visible_schedule, with_last


async def get_schedule(
    store: ScheduleStore, principal: Principal, schedule_id: str
) -> ScheduleRead:
    row = await visible_schedule(store, principal, schedule_id, Permission.SCHEDULES_READ)
    return await with_last(store, row)

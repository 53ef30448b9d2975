"""`GET /v1/schedules/{id}/firings`: the schedule's latest firing records, newest first,
with their tasks and outcomes. Needs schedules:read and the schedule in the token's scope."""

from __future__ import annotations

from agentcall.orbit.domain.schedule_records import FiringRow
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store.schedule_ports import ScheduleStore
from agentcall.orbit.usecases.schedule_access import visible_schedule


async def recent_firings(
    store: ScheduleStore, principal: Principal, schedule_id: str, limit: int
) -> list[FiringRow]:
    await visible_schedule(store, principal, schedule_id, Permission.SCHEDULES_READ)
    return await store.list_firings(schedule_id, limit)

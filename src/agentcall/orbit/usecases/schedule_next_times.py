"""`GET /v1/schedules/{id}/next`: the schedule's next nominal times from the database clock,
inside its start/end (paused or not: what it would fire). Needs schedules:read and the
schedule in the token's scope."""

from __future__ import annotations

from datetime import datetime

from agentcall.orbit.domain.schedule_view import next_times
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store.schedule_ports import ScheduleStore
from agentcall.orbit.usecases.schedule_access import visible_schedule


async def schedule_next_times(
    store: ScheduleStore, principal: Principal, schedule_id: str, count: int
) -> list[datetime]:
    row = await visible_schedule(store, principal, schedule_id, Permission.SCHEDULES_READ)
    return next_times(row, await store.now(), count)

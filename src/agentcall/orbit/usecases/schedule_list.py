"""`GET /v1/schedules`: a keyset page of the namespace's schedules whose target queue is in
the token's scope (one queue if `queue_id` is given; none outside the scope), by id, each
with its newest firing. Needs schedules:read."""

from __future__ import annotations

from dataclasses import dataclass

from agentcall.orbit.domain.schedule_plan import ScheduleState
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store.schedule_ports import ScheduleStore
from agentcall.orbit.usecases.schedule_access import ScheduleRead


@dataclass(frozen=True, slots=True)
class SchedulePage:
    """`after_id`: where the next page starts (None: this is the last page)."""

    items: list[ScheduleRead]
    after_id: str | None


async def list_schedules(
    store: ScheduleStore,
    principal: Principal,
    queue_id: str | None,
    state: ScheduleState | None,
    after_id: str | None,
    limit: int,
) -> SchedulePage:
    principal.require(Permission.SCHEDULES_READ)
    queues = principal.queue_ids if queue_id is None else principal.queue_ids & {queue_id}
    namespace = principal.namespace_id
    state_name = None if state is None else state.value
    rows = await store.page(namespace, queues, state_name, after_id, limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    last = await store.last_firings([row.id for row in rows])
    items = [ScheduleRead(row, last.get(row.id)) for row in rows]
    return SchedulePage(items, rows[-1].id if more else None)

"""What every schedule operation starts with (docs/orbit/schedules.md): the permission, and
the schedule if it is in the token's namespace and its target queue in the token's queue
scope; any other schedule is "not found", like a missing one."""

from __future__ import annotations

from dataclasses import dataclass

from agentcall.orbit.domain.errors import NotFound
from agentcall.orbit.domain.schedule_records import FiringRow, ScheduleRow
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store.schedule_ports import NOT_FOUND, ScheduleStore

__all__ = [
    "NOT_FOUND",
    "ScheduleRead",
    "ScheduleStore",
    "check_visible",
    "visible_schedule",
    "with_last",
]


@dataclass(frozen=True, slots=True)
class ScheduleRead:
    """A schedule and its newest firing record (None: it never fired)."""

    row: ScheduleRow
    last: FiringRow | None


def check_visible(principal: Principal, row: ScheduleRow | None) -> ScheduleRow:
    if (
        row is None
        or row.namespace_id != principal.namespace_id
        or row.queue_id not in principal.queue_ids
    ):
        raise NotFound(NOT_FOUND)
    return row


async def visible_schedule(
    store: ScheduleStore, principal: Principal, schedule_id: str, need: Permission
) -> ScheduleRow:
    principal.require(need)
    return check_visible(principal, await store.get(schedule_id))


async def with_last(store: ScheduleStore, row: ScheduleRow) -> ScheduleRead:
    last = await store.last_firings([row.id])
    return ScheduleRead(row, last.get(row.id))

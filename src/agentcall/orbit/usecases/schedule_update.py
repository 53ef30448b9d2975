"""`PATCH /v1/schedules/{id}`: replace the fields given (`template` and `spec` whole; null
clears `start_at`, `end_at` and `note`) if the schedule is at `expected_revision`, else
STATE_CONFLICT. Needs schedules:write, the schedule in the token's scope and, when the
template moves it, the new queue too. The next nominal time is computed again from now when
the spec or the bounds change; otherwise a due slot stays due."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.schedule_records import ScheduleRow
from agentcall.orbit.domain.schedule_request import parse_patch
from agentcall.orbit.domain.schedule_view import first_slot, row_of, stored_draft
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store.schedule_ports import ScheduleStore
from agentcall.orbit.usecases.schedule_access import (
    ScheduleRead,
    check_visible,
    visible_schedule,
    with_last,
)

_RESPEC = ("spec", "start_at", "end_at")


async def update_schedule(
    store: ScheduleStore, principal: Principal, schedule_id: str, body: JsonValue
) -> ScheduleRead:
    row = await visible_schedule(store, principal, schedule_id, Permission.SCHEDULES_WRITE)
    expected, draft = parse_patch(body, stored_draft(row), datetime.now(UTC))
    principal.require_queue(draft.template.request.queue_id)
    respec = isinstance(body, Mapping) and any(name in body for name in _RESPEC)

    def change(current: ScheduleRow, now: datetime) -> ScheduleRow:
        check_visible(principal, current)
        _, done = parse_patch(body, stored_draft(current), now)
        following = first_slot(done, now) if respec else current.next_fire_at
        return row_of(done, current, now, following)

    return await with_last(store, await store.update(schedule_id, expected, change))

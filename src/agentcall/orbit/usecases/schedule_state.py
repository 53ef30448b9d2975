"""`POST /v1/schedules/{id}:pause` and `:resume` at `expected_revision` (else
STATE_CONFLICT): a paused schedule fires nothing and has no next nominal time; resume fires
from the first slot at or after now (the slots of the pause are not caught up). A note given
replaces the schedule's note; without one it is kept. Pausing a paused or resuming an active
schedule changes only its revision and note. Needs schedules:write and the schedule in the
token's scope."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from agentcall.orbit.domain.schedule_plan import ScheduleState, next_in_bounds
from agentcall.orbit.domain.schedule_records import ScheduleRow, with_state
from agentcall.orbit.domain.schedule_view import bounds_of, spec_of
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store.schedule_ports import ScheduleStore
from agentcall.orbit.usecases.schedule_access import ScheduleRead, visible_schedule, with_last

_JUST_BEFORE = timedelta(microseconds=1)


def _next_fire_at(state: ScheduleState) -> Callable[[ScheduleRow, datetime], datetime | None]:
    def following(current: ScheduleRow, now: datetime) -> datetime | None:
        if state is ScheduleState.PAUSED:
            return None
        if current.state == ScheduleState.ACTIVE.value:
            return current.next_fire_at  # already active: a due slot stays due
        return next_in_bounds(spec_of(current), now - _JUST_BEFORE, bounds_of(current))

    return following


async def set_schedule_state(
    store: ScheduleStore,
    principal: Principal,
    schedule_id: str,
    state: ScheduleState,
    expected_revision: int,
    note: str | None,
    *,
    keep_note: bool,
) -> ScheduleRead:
    """`keep_note`: no note was given (the schedule's stays)."""
    row = await visible_schedule(store, principal, schedule_id, Permission.SCHEDULES_WRITE)
    kept = row.note if keep_note else note
    following = _next_fire_at(state)

    def change(current: ScheduleRow, now: datetime) -> ScheduleRow:
        return with_state(current, now, state.value, kept, following)

    done = await store.update(schedule_id, expected_revision, change)
    return await with_last(store, done)

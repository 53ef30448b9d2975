"""A schedule and one of its firing records as the store keeps them (docs/orbit/schedules.md):
plain values, the template and spec as the JSON texts the schedule was written with (their
slots are `agentcall.orbit.domain.schedules`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime


@dataclass(frozen=True, slots=True)
class ScheduleRow:
    """One schedule. `state`: active or paused; `next_fire_at`: the next nominal time (None
    while paused or after its end); `claimed_by`/`claim_until`: the server firing it now;
    `last_task_id`: the previous firing's task (overlap policies); `buffered_at`: the slot
    kept by `buffer_one`."""

    id: str
    namespace_id: str
    queue_id: str
    revision: int
    state: str
    note: str | None
    template_text: str
    spec_text: str
    start_at: datetime | None
    end_at: datetime | None
    jitter_ms: int
    catchup_window_ms: int
    overlap: str
    next_fire_at: datetime | None
    created_at: datetime
    updated_at: datetime
    claimed_by: str | None = None
    claim_until: datetime | None = None
    last_task_id: str | None = None
    buffered_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class FiringRow:
    """One record per (schedule, kind, nominal slot). `kind`: scheduled, trigger or
    backfill; `outcome`: fired, skipped_overlap, missed, backfilled or triggered; `task_id`:
    the task it submitted (None when nothing was submitted); `deduplicated`: the submit
    answered an existing task of the slot's key; `slots`: how many slots the record counts
    (more than one only for `missed`)."""

    id: str
    schedule_id: str
    nominal_at: datetime
    fired_at: datetime
    kind: str
    outcome: str
    task_id: str | None
    deduplicated: bool
    slots: int = 1


def with_state(
    current: ScheduleRow,
    now: datetime,
    state: str,
    note: str | None,
    next_fire_at: Callable[[ScheduleRow, datetime], datetime | None],
) -> ScheduleRow:
    """`current` paused or resumed at `now` (before its revision is bumped): its next nominal
    time anew, any claim and any buffered slot dropped."""
    return replace(
        current,
        state=state,
        note=note,
        next_fire_at=next_fire_at(current, now),
        claimed_by=None,
        claim_until=None,
        buffered_at=None,
    )

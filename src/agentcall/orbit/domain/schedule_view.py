"""A stored schedule read back and written out (docs/orbit/schedules.md): its settings as a
`Draft` again (for a patch), its spec and bounds, its next nominal times, and the JSON
objects of the API for a schedule and a firing record."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from agentcall.orbit.domain.jsonvalue import JsonValue, RawJson, dumps
from agentcall.orbit.domain.schedule_plan import (
    Bounds,
    OverlapPolicy,
    ScheduleState,
    next_in_bounds,
)
from agentcall.orbit.domain.schedule_records import FiringRow, ScheduleRow
from agentcall.orbit.domain.schedule_request import Draft, parse_spec, parse_template
from agentcall.orbit.domain.schedules import Spec
from agentcall.orbit.domain.strictjson import read_json_text
from agentcall.orbit.domain.times import format_time

_JUST_BEFORE = timedelta(microseconds=1)


def stored_draft(row: ScheduleRow) -> Draft:
    """The settings of a stored schedule (as create or patch wrote them)."""
    template = parse_template(read_json_text(row.template_text))
    spec = parse_spec(read_json_text(row.spec_text), row.created_at)
    return Draft(
        template,
        spec,
        row.start_at,
        row.end_at,
        row.jitter_ms,
        row.catchup_window_ms,
        OverlapPolicy(row.overlap),
        ScheduleState(row.state),
        row.note,
    )


def spec_of(row: ScheduleRow) -> Spec:
    return parse_spec(read_json_text(row.spec_text), row.created_at).spec


def bounds_of(row: ScheduleRow) -> Bounds:
    return Bounds(row.start_at, row.end_at)


def first_slot(draft: Draft, now: datetime) -> datetime | None:
    """The first nominal time at or after `now` inside the bounds (None: ended), for an
    active schedule; None for a paused one."""
    if draft.state is ScheduleState.PAUSED:
        return None
    return next_in_bounds(draft.spec.spec, now - _JUST_BEFORE, Bounds(draft.start_at, draft.end_at))


def next_times(row: ScheduleRow, now: datetime, count: int) -> list[datetime]:
    """The next `count` nominal times after `now` inside the bounds (fewer when it ends)."""
    spec, bounds = spec_of(row), bounds_of(row)
    found: list[datetime] = []
    current: datetime | None = now - _JUST_BEFORE
    while current is not None and len(found) < count:
        current = next_in_bounds(spec, current, bounds)
        if current is not None:
            found.append(current)
    return found


def row_of(
    draft: Draft, base: ScheduleRow, now: datetime, next_fire_at: datetime | None
) -> ScheduleRow:
    """`base` with the settings of `draft` (the target queue is the template's)."""
    return replace(
        base,
        queue_id=draft.template.request.queue_id,
        state=draft.state.value,
        note=draft.note,
        template_text=dumps(draft.template.document),
        spec_text=dumps(draft.spec.document),
        start_at=draft.start_at,
        end_at=draft.end_at,
        jitter_ms=draft.jitter_ms,
        catchup_window_ms=draft.catchup_window_ms,
        overlap=draft.overlap.value,
        next_fire_at=next_fire_at,
        updated_at=now,
    )


def new_row(draft: Draft, schedule_id: str, namespace_id: str, now: datetime) -> ScheduleRow:
    """A new schedule at revision 1, created at `now`."""
    empty = ScheduleRow(
        schedule_id, namespace_id, "", 1, "", None, "", "", None, None, 0, 0, "", None, now, now
    )
    return row_of(draft, empty, now, first_slot(draft, now))


def firing_view(row: FiringRow) -> dict[str, JsonValue]:
    view: dict[str, JsonValue] = {
        "id": row.id,
        "schedule_id": row.schedule_id,
        "nominal_at": format_time(row.nominal_at),
        "fired_at": format_time(row.fired_at),
        "kind": row.kind,
        "outcome": row.outcome,
    }
    if row.task_id is not None:
        view["task_id"] = row.task_id
    view["deduplicated"] = row.deduplicated
    view["slots"] = row.slots
    return view


def schedule_view(row: ScheduleRow, last: FiringRow | None) -> dict[str, JsonValue]:
    """The schedule object; optional fields are omitted when unset."""
    view: dict[str, JsonValue] = {
        "id": row.id,
        "namespace_id": row.namespace_id,
        "queue_id": row.queue_id,
        "revision": str(row.revision),
        "state": row.state,
    }
    if row.note is not None:
        view["note"] = row.note
    view["template"] = RawJson(row.template_text)
    view["spec"] = RawJson(row.spec_text)
    for name, at in (("start_at", row.start_at), ("end_at", row.end_at)):
        if at is not None:
            view[name] = format_time(at)
    view["jitter_ms"] = row.jitter_ms
    view["catchup_window_ms"] = row.catchup_window_ms
    view["overlap"] = row.overlap
    if row.next_fire_at is not None:
        view["next_fire_at"] = format_time(row.next_fire_at)
    if last is not None:
        view["last_firing"] = firing_view(last)
    view["created_at"] = format_time(row.created_at)
    view["updated_at"] = format_time(row.updated_at)
    return view

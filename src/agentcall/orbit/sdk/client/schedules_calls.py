"""The schedule operations as `Call`s (what to send, how to read the answer), written once
for the blocking and the asyncio client (`agentcall.orbit.sdk.client.schedules`). Create and
trigger carry an idempotency key; after `TransportError` or `UnavailableError` resend them with
the same key. Pause, resume, patch and delete are guarded by `expected_revision` instead."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from agentcall.orbit.domain.times import parse_time
from agentcall.orbit.sdk.client._calls import Call, checked_id, encode
from agentcall.orbit.sdk.client.binding import Page
from agentcall.orbit.sdk.client.models import _time, page_params
from agentcall.orbit.sdk.client.schedules_models import (
    Backfill,
    CreateScheduleRequest,
    Firing,
    Schedule,
    SchedulePage,
    ScheduleReceipt,
    TriggerReceipt,
    UpdateScheduleRequest,
)

MAX_COUNT = 100  # next times, firings, a page of schedules


def schedule_path(schedule_id: str) -> str:
    return f"/v1/schedules/{checked_id(schedule_id, 'schedule_id')}"


def _json(
    method: str, path: str, body: Any, parse: Callable[[Any, str], Any], key: str | None = None
) -> dict[str, Any]:
    """The fields of a `Call` that sends a JSON body (and an idempotency key)."""
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Idempotency-Key"] = key
    return {
        "method": method,
        "path": path,
        "parse": parse,
        "ok": frozenset({200, 201}),
        "headers": headers,
        "content": encode(body),
    }


def _schedule(data: Any, _: str) -> Schedule:
    return Schedule.from_json(data)


def _count(name: str, value: int) -> str:
    if not 1 <= value <= MAX_COUNT:
        raise ValueError(f"{name} must be 1-{MAX_COUNT}")
    return str(value)


def create(key: str, request: CreateScheduleRequest) -> Call[ScheduleReceipt]:
    """Create a schedule (the same key and content again answers the first receipt with
    `deduplicated=True`; another content with the key: IdempotencyConflictError)."""

    def receipt(data: Any, request_id: str) -> ScheduleReceipt:
        schedule = Schedule.from_json(data["schedule"])
        return ScheduleReceipt(schedule, bool(data["deduplicated"]), request_id)

    return Call(**_json("POST", "/v1/schedules", request.to_json(), receipt, key))


def get(schedule_id: str) -> Call[Schedule]:
    """One schedule: its template, spec, state, next nominal time and last firing."""
    return Call("GET", schedule_path(schedule_id), _schedule)


def list_page(
    queue_id: str | None = None,
    state: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[SchedulePage]:
    """One page of the namespace's schedules on the token's queues, by id."""
    params = {"queue_id": queue_id} if queue_id else {}
    params |= {"state": state} if state else {}
    params |= page_params(None if limit is None else int(_count("limit", limit)), cursor)
    return Call("GET", "/v1/schedules", lambda data, _: SchedulePage.from_json(data), params=params)


def every(
    queue_id: str | None = None, state: str | None = None
) -> Callable[[str | None], Call[Page[Schedule]]]:
    """Every schedule of the listing, page after page."""

    def page(cursor: str | None) -> Call[Page[Schedule]]:
        plain = list_page(queue_id, state, MAX_COUNT, cursor)
        return Call(plain.method, plain.path, plain.parse, params=plain.params)

    return page


def update(schedule_id: str, request: UpdateScheduleRequest) -> Call[Schedule]:
    """Replace the given fields at the expected revision (StateConflictError when stale)."""
    return Call(**_json("PATCH", schedule_path(schedule_id), request.to_json(), _schedule))


def delete(schedule_id: str, expected_revision: int | None = None) -> Call[None]:
    """Delete the schedule and its firing records; the tasks it submitted stay."""
    params = {} if expected_revision is None else {"expected_revision": str(expected_revision)}
    return Call("DELETE", schedule_path(schedule_id), lambda data, _: None, params=params)


def _state_body(expected_revision: int, note: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"expected_revision": str(expected_revision)}
    return body | ({} if note is None else {"note": note})


def pause(schedule_id: str, expected_revision: int, note: str | None = None) -> Call[Schedule]:
    """Stop firing; `note` says why (it replaces the schedule's note)."""
    body = _state_body(expected_revision, note)
    return Call(**_json("POST", schedule_path(schedule_id) + ":pause", body, _schedule))


def resume(schedule_id: str, expected_revision: int, note: str | None = None) -> Call[Schedule]:
    """Fire again from the first slot after now (the slots of the pause are not caught up)."""
    body = _state_body(expected_revision, note)
    return Call(**_json("POST", schedule_path(schedule_id) + ":resume", body, _schedule))


def trigger(schedule_id: str, key: str) -> Call[TriggerReceipt]:
    """Fire once now, paused or not, beside the nominal slots; the same key again answers the
    same firing and task (`deduplicated=True`)."""

    def receipt(data: Any, request_id: str) -> TriggerReceipt:
        firing = Firing.from_json(data["firing"])
        return TriggerReceipt(firing, bool(data["deduplicated"]), request_id)

    path = schedule_path(schedule_id) + ":trigger"
    return Call(**_json("POST", path, {}, receipt, key))


def _backfill(schedule_id: str, start: datetime, end: datetime, preview: bool) -> Call[Backfill]:
    def read(data: Any, _: str) -> Backfill:
        slots = [_parse(text) for text in data["slots"]]
        return Backfill(slots, [Firing.from_json(item) for item in data["firings"]])

    body = {"from": _time(start), "to": _time(end), "preview": preview}
    return Call(**_json("POST", schedule_path(schedule_id) + ":backfill", body, read))


def backfill(schedule_id: str, start: datetime, end: datetime) -> Call[Backfill]:
    """Fire the nominal slots of [start, end) (at most 1000, `end` not after now), each with
    its ordinary key: a slot that fired already is not fired again."""
    return _backfill(schedule_id, start, end, False)


def preview_backfill(schedule_id: str, start: datetime, end: datetime) -> Call[Backfill]:
    """The slots a backfill of [start, end) would fire; nothing is fired."""
    return _backfill(schedule_id, start, end, True)


def next_times(schedule_id: str, count: int = 10) -> Call[list[datetime]]:
    """The next `count` (1-100) nominal times from now (paused or not)."""
    return Call(
        "GET",
        schedule_path(schedule_id) + "/next",
        lambda data, _: [_parse(text) for text in data["times"]],
        params={"count": _count("count", count)},
    )


def firings(schedule_id: str, limit: int = 20) -> Call[list[Firing]]:
    """The schedule's recent firings (1-100), newest first, with their tasks and outcomes."""
    return Call(
        "GET",
        schedule_path(schedule_id) + "/firings",
        lambda data, _: [Firing.from_json(item) for item in data["items"]],
        params={"limit": _count("limit", limit)},
    )


def _parse(text: str) -> datetime:
    return parse_time(text, "response")

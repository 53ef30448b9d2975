"""Typed schedule requests and responses (docs/orbit/schedules.md). Times are timezone-aware
`datetime`s; payload numbers are `int` or `Decimal`, never float; revisions are `int`;
unknown response fields are ignored (forward compatible)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentcall.orbit.domain.times import parse_time
from agentcall.orbit.sdk.client.models import RetryPolicy, _time, _without_none

OVERLAP_POLICIES = ("allow", "skip", "buffer_one", "cancel_previous")
SCHEDULE_STATES = ("active", "paused")
FIRING_OUTCOMES = ("fired", "skipped_overlap", "missed", "backfilled", "triggered")


class Unchanged(enum.Enum):
    """The default of every field of `UpdateScheduleRequest`: not sent, kept as it is."""

    UNCHANGED = "unchanged"


UNCHANGED = Unchanged.UNCHANGED


@dataclass(frozen=True, slots=True)
class TaskTemplate:
    """The task each firing submits: a submit body without business_key, available_at and
    start_deadline_at. Omitted (None) fields take the task defaults."""

    queue_id: str
    handler: str
    handler_version: str
    payload_version: str
    payload: Any
    task_timeout_ms: int | None = None
    recovery_safety: str | None = None  # "RECONCILE_ONLY" (default) or "IDEMPOTENT"
    retry: RetryPolicy | None = None

    def to_json(self) -> dict[str, Any]:
        return _without_none(
            queue_id=self.queue_id,
            handler=self.handler,
            handler_version=self.handler_version,
            payload_version=self.payload_version,
            payload=self.payload,
            task_timeout_ms=self.task_timeout_ms,
            recovery_safety=self.recovery_safety,
            retry=None if self.retry is None else self.retry.to_json(),
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TaskTemplate:
        retry = data.get("retry")
        return cls(
            data["queue_id"],
            data["handler"],
            data["handler_version"],
            data["payload_version"],
            data.get("payload"),
            data.get("task_timeout_ms"),
            data.get("recovery_safety"),
            None if retry is None else RetryPolicy(**retry),
        )


@dataclass(frozen=True, slots=True)
class ScheduleSpec:
    """When slots fall: a 5-field `cron` in an IANA `time_zone`, or every `interval_ms` from
    `anchor_at`. Build one with `ScheduleSpec.of_cron(...)` or `ScheduleSpec.of_interval(...)`."""

    cron: str | None = None
    time_zone: str | None = None  # default UTC
    interval_ms: int | None = None
    anchor_at: datetime | None = None  # default: the creation time, whole second

    @classmethod
    def of_cron(cls, cron: str, time_zone: str | None = None) -> ScheduleSpec:
        return cls(cron=cron, time_zone=time_zone)

    @classmethod
    def of_interval(cls, interval_ms: int, anchor_at: datetime | None = None) -> ScheduleSpec:
        return cls(interval_ms=interval_ms, anchor_at=anchor_at)

    def to_json(self) -> dict[str, Any]:
        return _without_none(
            cron=self.cron,
            time_zone=self.time_zone,
            interval_ms=self.interval_ms,
            anchor_at=_time(self.anchor_at),
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScheduleSpec:
        return cls(
            data.get("cron"),
            data.get("time_zone"),
            data.get("interval_ms"),
            _at(data.get("anchor_at")),
        )

    def describe(self) -> str:
        """`cron 30 2 * * * Europe/Berlin` or `every 60 s`, for people."""
        if self.cron is not None:
            return f"cron {self.cron} {self.time_zone or 'UTC'}"
        seconds = (self.interval_ms or 0) // 1000
        return f"every {seconds} s"


@dataclass(frozen=True, slots=True)
class CreateScheduleRequest:
    """A new schedule; omitted (None) fields take the server defaults (catch-up window
    300000 ms, overlap `skip`, jitter 0, state `active`)."""

    template: TaskTemplate
    spec: ScheduleSpec
    start_at: datetime | None = None
    end_at: datetime | None = None
    jitter_ms: int | None = None
    catchup_window_ms: int | None = None
    overlap: str | None = None  # allow, skip, buffer_one, cancel_previous
    state: str | None = None  # active or paused
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return _without_none(
            template=self.template.to_json(),
            spec=self.spec.to_json(),
            start_at=_time(self.start_at),
            end_at=_time(self.end_at),
            jitter_ms=self.jitter_ms,
            catchup_window_ms=self.catchup_window_ms,
            overlap=self.overlap,
            state=self.state,
            note=self.note,
        )


@dataclass(frozen=True, slots=True)
class UpdateScheduleRequest:
    """Replace some fields at `expected_revision`; a field left UNCHANGED is not sent, and
    None clears `start_at`, `end_at` or `note`. `template` and `spec` are replaced whole."""

    expected_revision: int
    template: TaskTemplate | Unchanged = UNCHANGED
    spec: ScheduleSpec | Unchanged = UNCHANGED
    start_at: datetime | None | Unchanged = UNCHANGED
    end_at: datetime | None | Unchanged = UNCHANGED
    jitter_ms: int | Unchanged = UNCHANGED
    catchup_window_ms: int | Unchanged = UNCHANGED
    overlap: str | Unchanged = UNCHANGED
    note: str | None | Unchanged = UNCHANGED

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"expected_revision": str(self.expected_revision)}
        for name in _UPDATABLE:
            _put(body, name, getattr(self, name))
        return body


_UPDATABLE = (
    "template",
    "spec",
    "start_at",
    "end_at",
    "jitter_ms",
    "catchup_window_ms",
    "overlap",
    "note",
)


def _put(body: dict[str, Any], name: str, value: Any) -> None:
    if value is UNCHANGED:
        return
    if isinstance(value, TaskTemplate | ScheduleSpec):
        body[name] = value.to_json()
    elif isinstance(value, datetime):
        body[name] = _time(value)
    else:
        body[name] = value


@dataclass(frozen=True, slots=True)
class Firing:
    """One firing record: a slot fired (its task), skipped for overlap, missed beyond the
    catch-up window (`slots` counts them), backfilled or triggered."""

    id: str
    schedule_id: str
    nominal_at: datetime
    fired_at: datetime
    kind: str  # scheduled, trigger, backfill
    outcome: str  # fired, skipped_overlap, missed, backfilled, triggered
    task_id: str | None
    deduplicated: bool
    slots: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Firing:
        return cls(
            data["id"],
            data["schedule_id"],
            parse_time(data["nominal_at"], "nominal_at"),
            parse_time(data["fired_at"], "fired_at"),
            data["kind"],
            data["outcome"],
            data.get("task_id"),
            bool(data.get("deduplicated", False)),
            int(data.get("slots", 1)),
        )


@dataclass(frozen=True, slots=True)
class Schedule:
    id: str
    revision: int
    state: str  # active or paused
    note: str | None
    template: TaskTemplate
    spec: ScheduleSpec
    start_at: datetime | None
    end_at: datetime | None
    jitter_ms: int
    catchup_window_ms: int
    overlap: str
    next_fire_at: datetime | None  # None when paused or ended
    last_firing: Firing | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Schedule:
        last = data.get("last_firing")
        return cls(
            data["id"],
            int(data["revision"]),
            data["state"],
            data.get("note"),
            TaskTemplate.from_json(data["template"]),
            ScheduleSpec.from_json(data["spec"]),
            _at(data.get("start_at")),
            _at(data.get("end_at")),
            int(data.get("jitter_ms", 0)),
            int(data["catchup_window_ms"]),
            data["overlap"],
            _at(data.get("next_fire_at")),
            None if last is None else Firing.from_json(last),
            parse_time(data["created_at"], "created_at"),
            parse_time(data["updated_at"], "updated_at"),
        )


@dataclass(frozen=True, slots=True)
class ScheduleReceipt:
    """The answer of create: `deduplicated` is True for a same-key replay, which returns the
    first receipt (GET the schedule for its current state)."""

    schedule: Schedule
    deduplicated: bool
    request_id: str


@dataclass(frozen=True, slots=True)
class SchedulePage:
    items: list[Schedule]
    next_cursor: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SchedulePage:
        items = [Schedule.from_json(item) for item in data["items"]]
        return cls(items, data.get("next_cursor"))


@dataclass(frozen=True, slots=True)
class TriggerReceipt:
    """The firing of a trigger; `deduplicated`: the same key again, the same task."""

    firing: Firing
    deduplicated: bool
    request_id: str


@dataclass(frozen=True, slots=True)
class Backfill:
    """The slots of the range and, unless previewed, their firings (a slot that had fired
    already says `deduplicated` and names its existing task)."""

    slots: list[datetime]
    firings: list[Firing]


def _at(value: str | None) -> datetime | None:
    return None if value is None else parse_time(value, "response")

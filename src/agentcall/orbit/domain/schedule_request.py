"""The bodies of the schedule routes (docs/orbit/schedules.md), read strictly: create, patch,
pause/resume and backfill. A template is a submit body without business_key, available_at,
start_deadline_at and the flow fields, checked by the submit's own rules; a spec is a cron
with its zone or an interval with its anchor."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from agentcall.orbit.domain.canonical import Digest, digest
from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.fields import ObjectReader
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.numbers import parse_decimal_uint64, parse_uint64
from agentcall.orbit.domain.schedule_plan import (
    DEFAULT_CATCHUP_WINDOW_MS,
    MAX_CATCHUP_WINDOW_MS,
    MAX_JITTER_MS,
    MIN_CATCHUP_WINDOW_MS,
    OverlapPolicy,
    ScheduleState,
)
from agentcall.orbit.domain.schedules import Spec, cron_spec, interval_spec
from agentcall.orbit.domain.submit import SubmitRequest, parse_submit, submit_document
from agentcall.orbit.domain.times import format_time

TEMPLATE_FIELDS = frozenset(
    {
        "queue_id",
        "handler",
        "handler_version",
        "payload_version",
        "payload",
        "task_timeout_ms",
        "recovery_safety",
        "retry",
    }
)
SPEC_FIELDS = frozenset({"cron", "time_zone", "interval_ms", "anchor_at"})
UPDATABLE = frozenset(
    {"template", "spec", "start_at", "end_at", "jitter_ms", "catchup_window_ms", "overlap", "note"}
)
CREATE_FIELDS = UPDATABLE | {"state"}
PATCH_FIELDS = UPDATABLE | {"expected_revision"}
STATE_FIELDS = frozenset({"expected_revision", "note"})
BACKFILL_FIELDS = frozenset({"from", "to", "preview"})
MAX_NOTE_CHARS = 1000
MAX_BACKFILL_SLOTS = 1000
OPERATION = "schedules.create"


@dataclass(frozen=True, slots=True)
class Template:
    """The task of every firing: the submit it makes and its document (stored as JSON)."""

    request: SubmitRequest
    document: dict[str, JsonValue]


@dataclass(frozen=True, slots=True)
class SpecDocument:
    spec: Spec
    document: dict[str, JsonValue]


@dataclass(frozen=True, slots=True)
class Draft:
    """A schedule's settings as written by create or patch (defaults applied)."""

    template: Template
    spec: SpecDocument
    start_at: datetime | None
    end_at: datetime | None
    jitter_ms: int
    catchup_window_ms: int
    overlap: OverlapPolicy
    state: ScheduleState
    note: str | None

    def document(self) -> dict[str, JsonValue]:
        return {
            "template": self.template.document,
            "spec": self.spec.document,
            "start_at": None if self.start_at is None else format_time(self.start_at),
            "end_at": None if self.end_at is None else format_time(self.end_at),
            "jitter_ms": self.jitter_ms,
            "catchup_window_ms": self.catchup_window_ms,
            "overlap": self.overlap.value,
            "state": self.state.value,
            "note": self.note,
        }


def create_digest(body: JsonValue) -> Digest:
    """What a create's idempotency key covers: the body as sent (the anchor's default is
    the creation time, not content)."""
    return digest(OPERATION, body)


def parse_template(value: JsonValue) -> Template:
    ObjectReader(value, TEMPLATE_FIELDS, "template.")
    try:
        request = parse_submit(value)
    except InvalidArgument as exc:
        message = exc.message.removeprefix(f"{exc.field}: ") if exc.field else exc.message
        raise InvalidArgument(message, f"template.{exc.field or ''}".rstrip(".")) from None
    document = submit_document(request)
    return Template(request, document)


def parse_spec(value: JsonValue, now: datetime) -> SpecDocument:
    """`{"cron", "time_zone"}` or `{"interval_ms", "anchor_at"}` (anchor default: `now`,
    whole second)."""
    fields = ObjectReader(value, SPEC_FIELDS, "spec.")
    cron = fields.string("cron", required=False, max_chars=200)
    if cron is not None:
        if fields.present("interval_ms") or fields.present("anchor_at"):
            raise InvalidArgument("give either cron (and time_zone) or interval_ms", "spec")
        zone = fields.string("time_zone", required=False, max_chars=64) or "UTC"
        spec = cron_spec(cron, zone)
        return SpecDocument(spec, {"cron": spec.cron.text, "time_zone": zone})
    if fields.present("time_zone"):
        raise InvalidArgument("a time zone applies to a cron spec only", "spec.time_zone")
    if not fields.present("interval_ms"):
        raise InvalidArgument("give cron (and time_zone) or interval_ms", "spec")
    interval_ms = parse_uint64(fields.raw("interval_ms"), "spec.interval_ms")
    anchor = fields.time("anchor_at") or now.replace(microsecond=0)
    interval = interval_spec(interval_ms, anchor)
    return SpecDocument(interval, {"interval_ms": interval_ms, "anchor_at": format_time(anchor)})


def parse_create(body: JsonValue, now: datetime) -> Draft:
    fields = ObjectReader(body, CREATE_FIELDS)
    draft = Draft(
        parse_template(fields.raw("template", required=True)),
        parse_spec(fields.raw("spec", required=True), now),
        fields.time("start_at"),
        fields.time("end_at"),
        _bounded(fields, "jitter_ms", MAX_JITTER_MS, 0),
        _catchup(fields, DEFAULT_CATCHUP_WINDOW_MS),
        _overlap(fields) or OverlapPolicy.SKIP,
        _state(fields),
        _note(fields),
    )
    return _checked(draft)


def parse_patch(body: JsonValue, current: Draft, now: datetime) -> tuple[int, Draft]:
    """(expected revision, the draft with the given fields replaced)."""
    fields = ObjectReader(body, PATCH_FIELDS)
    revision = parse_revision(fields)
    changes: dict[str, object] = {}
    if fields.present("template"):
        changes["template"] = parse_template(fields.raw("template"))
    if fields.present("spec"):
        changes["spec"] = parse_spec(fields.raw("spec"), now)
    for name in ("start_at", "end_at"):
        if fields.present(name):
            changes[name] = fields.time(name)
    if fields.present("jitter_ms"):
        changes["jitter_ms"] = _bounded(fields, "jitter_ms", MAX_JITTER_MS, 0)
    if fields.present("catchup_window_ms"):
        changes["catchup_window_ms"] = _catchup(fields, current.catchup_window_ms)
    if fields.present("overlap"):
        changes["overlap"] = _overlap(fields)
    if fields.present("note"):
        changes["note"] = _note(fields)
    return revision, _checked(replace(current, **changes))  # type: ignore[arg-type]


def parse_state_change(body: JsonValue) -> tuple[int, str | None, bool]:
    """Pause/resume: (expected revision, note, whether a note was given)."""
    fields = ObjectReader(body, STATE_FIELDS)
    revision = parse_revision(fields)
    return revision, _note(fields), fields.present("note")


def parse_revision(fields: ObjectReader) -> int:
    text = fields.raw("expected_revision", required=True)
    if not isinstance(text, str):
        raise InvalidArgument('must be a decimal string such as "1"', "expected_revision")
    return parse_decimal_uint64(text, "expected_revision", nonzero=True)


@dataclass(frozen=True, slots=True)
class BackfillRange:
    start: datetime
    end: datetime
    preview: bool


def parse_backfill(body: JsonValue, now: datetime) -> BackfillRange:
    fields = ObjectReader(body, BACKFILL_FIELDS)
    start = fields.time("from")
    end = fields.time("to")
    if start is None or end is None:
        raise InvalidArgument("is required", "from" if start is None else "to")
    if end <= start:
        raise InvalidArgument("must be after from", "to")
    if end > now + timedelta(seconds=1):
        raise InvalidArgument("must not be in the future (the schedule fires those)", "to")
    preview = fields.raw("preview")
    if preview is not None and not isinstance(preview, bool):
        raise InvalidArgument("must be true or false", "preview")
    return BackfillRange(start, end, bool(preview))


def _bounded(fields: ObjectReader, name: str, maximum: int, default: int, minimum: int = 0) -> int:
    if not fields.present(name):
        return default
    value = parse_uint64(fields.raw(name), name)
    if not minimum <= value <= maximum:
        raise InvalidArgument(f"must be {minimum}-{maximum}", name)
    return value


def _catchup(fields: ObjectReader, default: int) -> int:
    name, low, high = "catchup_window_ms", MIN_CATCHUP_WINDOW_MS, MAX_CATCHUP_WINDOW_MS
    return _bounded(fields, name, high, default, low)


def _overlap(fields: ObjectReader) -> OverlapPolicy | None:
    value = fields.raw("overlap")
    if value is None:
        return None
    if not isinstance(value, str) or value not in {p.value for p in OverlapPolicy}:
        names = ", ".join(p.value for p in OverlapPolicy)
        raise InvalidArgument(f"must be one of {names}", "overlap")
    return OverlapPolicy(value)


def _state(fields: ObjectReader) -> ScheduleState:
    value = fields.raw("state")
    if value is None:
        return ScheduleState.ACTIVE
    if not isinstance(value, str) or value not in {s.value for s in ScheduleState}:
        raise InvalidArgument("must be active or paused", "state")
    return ScheduleState(value)


def _note(fields: ObjectReader) -> str | None:
    value = fields.raw("note", nullable=True)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_NOTE_CHARS:
        raise InvalidArgument(f"must be a string of at most {MAX_NOTE_CHARS} characters", "note")
    return value


def _checked(draft: Draft) -> Draft:
    if draft.start_at and draft.end_at and draft.end_at <= draft.start_at:
        raise InvalidArgument("must be after start_at", "end_at")
    return draft

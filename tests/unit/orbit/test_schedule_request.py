"""The schedule request bodies read strictly (docs/orbit/schedules.md): create, patch,
pause/resume and backfill. Table-driven: every refusal names its field; hostile values of
every JSON type in every field are a 400, never another exception; defaults, interval and
window limits, zones and cron fields as the server reads them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.schedule_plan import OverlapPolicy, ScheduleState
from agentcall.orbit.domain.schedule_request import (
    create_digest,
    parse_backfill,
    parse_create,
    parse_patch,
    parse_state_change,
)
from agentcall.orbit.domain.schedules import CronSpec, IntervalSpec
from agentcall.orbit.domain.strictjson import read_json

pytestmark = pytest.mark.unit
ID = "1" * 32
NOW = datetime(2026, 12, 3, 12, 0, 0, 250_000, tzinfo=UTC)
TEMPLATE: dict[str, Any] = {
    "queue_id": ID,
    "handler": "reports.daily",
    "handler_version": "v1",
    "payload_version": "v1",
    "payload": {"n": 9007199254740993},
}
CREATE: dict[str, Any] = {
    "template": TEMPLATE,
    "spec": {"cron": "30 2 * * *", "time_zone": "Europe/Berlin"},
}
FULL: dict[str, Any] = {
    "template": {
        **TEMPLATE,
        "task_timeout_ms": 60000,
        "recovery_safety": "IDEMPOTENT",
        "retry": {"max_attempts": 3, "attempt_timeout_ms": 1000},
    },
    "spec": {"interval_ms": 60000, "anchor_at": "2026-01-01T00:00:00Z"},
    "start_at": "2026-01-01T00:00:00Z",
    "end_at": "2027-01-01T00:00:00Z",
    "jitter_ms": 500,
    "catchup_window_ms": 60000,
    "overlap": "buffer_one",
    "state": "paused",
    "note": "n",
}


def read(value: Any) -> Any:
    """The value as the server's strict reader hands it over (exact numbers)."""
    return read_json(json.dumps(value).encode())


def refusal(parse: Any, *args: Any) -> str:
    with pytest.raises(InvalidArgument) as caught:
        parse(*args)
    return caught.value.field or ""


def test_a_minimal_create_takes_the_defaults() -> None:
    draft = parse_create(read(CREATE), NOW)
    assert isinstance(draft.spec.spec, CronSpec)
    assert draft.spec.document == {"cron": "30 2 * * *", "time_zone": "Europe/Berlin"}
    assert (draft.jitter_ms, draft.catchup_window_ms) == (0, 300_000)
    assert (draft.overlap, draft.state, draft.note) == (
        OverlapPolicy.SKIP,
        ScheduleState.ACTIVE,
        None,
    )
    assert draft.template.document["retry"] == {
        "max_attempts": 1,
        "initial_delay_ms": 0,
        "max_delay_ms": 0,
        "attempt_timeout_ms": 30000,
    }
    assert draft.template.request.payload_text == '{"n":9007199254740993}'


def test_every_field_of_a_full_create_is_read() -> None:
    draft = parse_create(read(FULL), NOW)
    assert isinstance(draft.spec.spec, IntervalSpec) and draft.spec.spec.interval_ms == 60000
    assert draft.start_at == datetime(2026, 1, 1, tzinfo=UTC)
    assert (draft.jitter_ms, draft.catchup_window_ms) == (500, 60000)
    assert (draft.overlap, draft.state, draft.note) == (
        OverlapPolicy.BUFFER_ONE,
        ScheduleState.PAUSED,
        "n",
    )
    assert draft.template.request.retry.max_attempts == 3


def test_an_interval_without_anchor_starts_at_the_whole_second_of_creation() -> None:
    draft = parse_create(read({**CREATE, "spec": {"interval_ms": 1000}}), NOW)
    assert draft.spec.document["anchor_at"] == "2026-12-03T12:00:00Z"


def test_the_digest_covers_the_body_as_sent() -> None:
    assert create_digest(read(CREATE)) == create_digest(read(dict(reversed(CREATE.items()))))
    assert create_digest(read(CREATE)) != create_digest(read({**CREATE, "overlap": "skip"}))


CREATE_REFUSALS: list[tuple[str, dict[str, Any], str]] = [
    ("unknown field", {"colour": "red"}, "colour"),
    ("case variant", {"Overlap": "skip"}, "Overlap"),
    ("no template", {"template": None}, "template"),
    ("template not an object", {"template": ["x"]}, "template"),
    (
        "template unknown field",
        {"template": {**TEMPLATE, "business_key": "b"}},
        "template.business_key",
    ),
    (
        "template available_at",
        {"template": {**TEMPLATE, "available_at": None}},
        "template.available_at",
    ),
    ("template flow field", {"template": {**TEMPLATE, "priority": 9}}, "template.priority"),
    ("template bad queue", {"template": {**TEMPLATE, "queue_id": "Q"}}, "template.queue_id"),
    ("template handler", {"template": {**TEMPLATE, "handler": "-x"}}, "template.handler"),
    (
        "template retry",
        {"template": {**TEMPLATE, "retry": {"max_attempts": 101}}},
        "template.retry.max_attempts",
    ),
    ("no spec", {"spec": {}}, "spec"),
    ("spec unknown", {"spec": {"cron": "* * * * *", "seconds": 1}}, "spec.seconds"),
    ("cron and interval", {"spec": {"cron": "* * * * *", "interval_ms": 1000}}, "spec"),
    ("zone on interval", {"spec": {"interval_ms": 1000, "time_zone": "UTC"}}, "spec.time_zone"),
    ("cron minute", {"spec": {"cron": "60 * * * *"}}, "spec.cron"),
    ("cron fields", {"spec": {"cron": "* * * *"}}, "spec.cron"),
    ("cron seconds", {"spec": {"cron": "0 * * * * *"}}, "spec.cron"),
    ("cron macro", {"spec": {"cron": "@daily"}}, "spec.cron"),
    ("cron never", {"spec": {"cron": "0 0 30 2 *"}}, "spec.cron"),
    ("cron empty", {"spec": {"cron": ""}}, "spec.cron"),
    ("cron long", {"spec": {"cron": "1," * 150 + "1 * * * *"}}, "spec.cron"),
    (
        "zone unknown",
        {"spec": {"cron": "* * * * *", "time_zone": "Mars/Olympus"}},
        "spec.time_zone",
    ),
    (
        "zone path",
        {"spec": {"cron": "* * * * *", "time_zone": "../../etc/passwd"}},
        "spec.time_zone",
    ),
    (
        "zone absolute",
        {"spec": {"cron": "* * * * *", "time_zone": "/etc/localtime"}},
        "spec.time_zone",
    ),
    ("zone nul", {"spec": {"cron": "* * * * *", "time_zone": "UTC\u0000"}}, "spec.time_zone"),
    ("zone empty", {"spec": {"cron": "* * * * *", "time_zone": ""}}, "spec.time_zone"),
    ("interval short", {"spec": {"interval_ms": 999}}, "spec.interval_ms"),
    ("interval zero", {"spec": {"interval_ms": 0}}, "spec.interval_ms"),
    ("interval long", {"spec": {"interval_ms": 366 * 86_400_000 + 1}}, "spec.interval_ms"),
    ("interval negative", {"spec": {"interval_ms": -1000}}, "spec.interval_ms"),
    ("interval fraction", {"spec": {"interval_ms": 1000.5}}, "spec.interval_ms"),
    ("interval string", {"spec": {"interval_ms": "1000"}}, "spec.interval_ms"),
    ("interval huge", {"spec": {"interval_ms": 2**70}}, "spec.interval_ms"),
    ("anchor text", {"spec": {"interval_ms": 1000, "anchor_at": "today"}}, "spec.anchor_at"),
    ("jitter over", {"jitter_ms": 3_600_001}, "jitter_ms"),
    ("jitter negative", {"jitter_ms": -1}, "jitter_ms"),
    ("catch-up under", {"catchup_window_ms": 999}, "catchup_window_ms"),
    ("catch-up over", {"catchup_window_ms": 7 * 86_400_000 + 1}, "catchup_window_ms"),
    ("overlap unknown", {"overlap": "never"}, "overlap"),
    ("overlap type", {"overlap": ["skip"]}, "overlap"),
    ("state unknown", {"state": "running"}, "state"),
    ("note long", {"note": "x" * 1001}, "note"),
    ("note type", {"note": 5}, "note"),
    ("start text", {"start_at": "soon"}, "start_at"),
    (
        "end before start",
        {"start_at": "2026-02-01T00:00:00Z", "end_at": "2026-01-01T00:00:00Z"},
        "end_at",
    ),
    (
        "end at start",
        {"start_at": "2026-02-01T00:00:00Z", "end_at": "2026-02-01T00:00:00Z"},
        "end_at",
    ),
]


@pytest.mark.parametrize(
    ("changes", "field"), [c[1:] for c in CREATE_REFUSALS], ids=[c[0] for c in CREATE_REFUSALS]
)
def test_a_bad_create_is_refused_naming_its_field(changes: dict[str, Any], field: str) -> None:
    assert refusal(parse_create, read({**CREATE, **changes}), NOW) == field


def test_a_body_that_is_not_an_object_is_refused() -> None:
    for body in ([], "x", 1, None):
        assert refusal(parse_create, read(body), NOW) == "body"


def test_the_limits_themselves_are_accepted() -> None:
    for changes in (
        {"spec": {"interval_ms": 1000}},
        {"spec": {"interval_ms": 366 * 86_400_000}},
        {"jitter_ms": 3_600_000, "catchup_window_ms": 1000},
        {"catchup_window_ms": 7 * 86_400_000, "note": "x" * 1000},
        {"spec": {"cron": "*/7 * * * sun", "time_zone": "America/St_Johns"}},
    ):
        parse_create(read({**CREATE, **changes}), NOW)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for key, child in value.items():
            found.append((*prefix, key))
            found.extend(_paths(child, (*prefix, key)))
    return found


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    copy = json.loads(json.dumps(value))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return copy


HOSTILE: list[Any] = [{"a": "b"}, ["x"], [], {}, 1, -1.5, True, None, "x" * 300, 2**80, "\ud800"]


@pytest.mark.parametrize("path", _paths(FULL), ids=lambda p: ".".join(map(str, p)))
def test_any_json_value_in_any_field_is_accepted_or_a_400(path: tuple[Any, ...]) -> None:
    for wrong in HOSTILE:
        try:
            body = read(_replaced(FULL, path, wrong))
        except InvalidArgument:
            continue  # the strict reader refused it already (a lone surrogate)
        try:
            parse_create(body, NOW)
        except InvalidArgument:
            pass


def test_a_patch_replaces_only_the_fields_given() -> None:
    current = parse_create(read(FULL), NOW)
    revision, done = parse_patch(read({"expected_revision": "4", "jitter_ms": 7}), current, NOW)
    assert revision == 4 and done.jitter_ms == 7
    assert done.template == current.template and done.spec == current.spec
    assert done.state is ScheduleState.PAUSED  # state changes by pause/resume only
    body = {"expected_revision": "4", "note": None, "start_at": None, "end_at": None}
    _, cleared = parse_patch(read(body), current, NOW)
    assert (cleared.note, cleared.start_at, cleared.end_at) == (None, None, None)
    spec = {"expected_revision": "4", "spec": {"cron": "0 9 * * mon-fri"}}
    _, respecced = parse_patch(read(spec), current, NOW)
    assert respecced.spec.document == {"cron": "0 9 * * mon-fri", "time_zone": "UTC"}


PATCH_REFUSALS: list[tuple[str, dict[str, Any], str]] = [
    ("no revision", {"jitter_ms": 1}, "expected_revision"),
    ("revision number", {"expected_revision": 4}, "expected_revision"),
    ("revision zero", {"expected_revision": "0"}, "expected_revision"),
    ("revision sign", {"expected_revision": "+4"}, "expected_revision"),
    ("revision leading zero", {"expected_revision": "04"}, "expected_revision"),
    ("state", {"expected_revision": "4", "state": "active"}, "state"),
    ("unknown", {"expected_revision": "4", "id": ID}, "id"),
    ("end before start", {"expected_revision": "4", "end_at": "2025-01-01T00:00:00Z"}, "end_at"),
    ("catch-up", {"expected_revision": "4", "catchup_window_ms": 0}, "catchup_window_ms"),
    ("template", {"expected_revision": "4", "template": {"queue_id": ID}}, "template.handler"),
]


@pytest.mark.parametrize(
    ("body", "field"), [c[1:] for c in PATCH_REFUSALS], ids=[c[0] for c in PATCH_REFUSALS]
)
def test_a_bad_patch_is_refused_naming_its_field(body: dict[str, Any], field: str) -> None:
    current = parse_create(read(FULL), NOW)
    assert refusal(parse_patch, read(body), current, NOW).startswith(field.split(".")[0])


def test_pause_and_resume_read_the_revision_and_an_optional_note() -> None:
    assert parse_state_change(read({"expected_revision": "3"})) == (3, None, False)
    assert parse_state_change(read({"expected_revision": "3", "note": "why"})) == (3, "why", True)
    assert parse_state_change(read({"expected_revision": "3", "note": None})) == (3, None, True)
    for body, field in (
        ({}, "expected_revision"),
        ({"expected_revision": "3", "reason": "x"}, "reason"),
        ({"expected_revision": "3", "note": "x" * 1001}, "note"),
        ({"expected_revision": "3", "note": {}}, "note"),
    ):
        assert refusal(parse_state_change, read(body)) == field


def test_a_backfill_range_is_past_ordered_and_strict() -> None:
    body = {"from": "2026-12-01T00:00:00Z", "to": "2026-12-02T00:00:00Z"}
    got = parse_backfill(read(body), NOW)
    assert (got.start, got.end, got.preview) == (
        datetime(2026, 12, 1, tzinfo=UTC),
        datetime(2026, 12, 2, tzinfo=UTC),
        False,
    )
    assert parse_backfill(read({**body, "preview": True}), NOW).preview
    future = (NOW + timedelta(seconds=2)).isoformat()
    for changes, field in (
        ({"from": None}, "from"),
        ({"to": None}, "to"),
        ({"to": "2026-12-01T00:00:00Z"}, "to"),
        ({"to": "2026-11-01T00:00:00Z"}, "to"),
        ({"to": future}, "to"),
        ({"preview": "yes"}, "preview"),
        ({"preview": None}, "preview"),
        ({"limit": 5}, "limit"),
    ):
        assert refusal(parse_backfill, read({**body, **changes}), NOW) == field

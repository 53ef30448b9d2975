"""O-SUB-3 / O-NOTE-4: every row of the field table of POST /v1/tasks, as pure rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.jsonvalue import JsonNumber
from agentcall.orbit.domain.strictjson import read_json_text
from agentcall.orbit.domain.submit import RecoverySafety, RetryPolicy, parse_submit, plan_times
from agentcall.orbit.domain.times import format_time

pytestmark = pytest.mark.unit

QUEUE = "1" * 32
NOW = datetime(2026, 9, 17, tzinfo=UTC)


def body(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "queue_id": QUEUE,
        "handler": "file.convert",
        "handler_version": "v1",
        "payload_version": "v1",
        "payload": {"a": JsonNumber("1")},
    }
    for key, value in changes.items():
        if value is _DROP:
            base.pop(key, None)
        else:
            base[key] = value
    return base


_DROP = object()


def n(value: int | str) -> JsonNumber:
    return JsonNumber(str(value))


def test_o_sub_3_defaults() -> None:
    """O-SUB-3: omitted optional fields take the documented defaults."""
    request = parse_submit(body())
    assert request.task_timeout_ms == 86_400_000
    assert request.recovery_safety is RecoverySafety.RECONCILE_ONLY
    assert request.retry == RetryPolicy(1, 0, 0, 30_000)
    assert request.business_key is None and request.available_at is None
    times = plan_times(request, NOW)
    assert times.available_at == NOW
    assert times.deadline_at == NOW + timedelta(days=1)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"task_timeout_ms": n(0)}, RetryPolicy(1, 0, 0, 30_000)),
        ({"retry": {"max_attempts": n(0)}}, RetryPolicy(1, 0, 0, 30_000)),
        ({"retry": {"max_attempts": n(3)}}, RetryPolicy(3, 1000, 30_000, 30_000)),
        (
            {"retry": {"max_attempts": n(2), "initial_delay_ms": n(0), "max_delay_ms": n(0)}},
            RetryPolicy(2, 1000, 30_000, 30_000),
        ),
        (
            {"retry": {"max_attempts": n(100), "max_delay_ms": n(9_223_372_036_854)}},
            RetryPolicy(100, 1000, 9_223_372_036_854, 30_000),
        ),
        ({"retry": {"attempt_timeout_ms": n(5)}}, RetryPolicy(1, 0, 0, 5)),
        (
            {"retry": {"max_attempts": n(2), "initial_delay_ms": n(5), "max_delay_ms": n(5)}},
            RetryPolicy(2, 5, 5, 30_000),
        ),
        ({"retry": {}}, RetryPolicy(1, 0, 0, 30_000)),
    ],
)
def test_o_sub_3_retry_defaults(changes: dict[str, Any], expected: RetryPolicy) -> None:
    """O-SUB-3: 0 or omitted retry fields take defaults that depend on max_attempts."""
    assert parse_submit(body(**changes)).retry == expected


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"queue_id": _DROP}, "queue_id"),
        ({"queue_id": "ABC"}, "queue_id"),
        ({"queue_id": "1" * 31}, "queue_id"),
        ({"queue_id": None}, "queue_id"),
        ({"handler": _DROP}, "handler"),
        ({"handler": ""}, "handler"),
        ({"handler": "h" * 129}, "handler"),
        ({"handler": "-starts-with-dash"}, "handler"),
        ({"handler": "has space"}, "handler"),
        ({"handler": "ünicode"}, "handler"),
        ({"handler": n(1)}, "handler"),
        ({"handler_version": _DROP}, "handler_version"),
        ({"handler_version": "v" * 65}, "handler_version"),
        ({"handler_version": "v/1"}, "handler_version"),
        ({"payload_version": _DROP}, "payload_version"),
        ({"payload_version": "p" * 33}, "payload_version"),
        ({"payload_version": "_x"}, "payload_version"),
        ({"payload": _DROP}, "payload"),
        ({"payload": None}, "payload"),
        ({"payload": "x" * 262_143}, "payload"),  # 262,145 bytes with quotes
        ({"business_key": None}, "business_key"),
        ({"business_key": ""}, "business_key"),
        ({"business_key": "k" * 192}, "business_key"),
        ({"business_key": "a\nb"}, "business_key"),
        ({"business_key": "a\rb"}, "business_key"),
        ({"business_key": "a\x00b"}, "business_key"),
        ({"business_key": n(1)}, "business_key"),
        ({"available_at": "tomorrow"}, "available_at"),
        ({"available_at": n(1)}, "available_at"),
        ({"start_deadline_at": "2026-09-17T00:00:00"}, "start_deadline_at"),
        ({"task_timeout_ms": n(2_592_000_001)}, "task_timeout_ms"),
        ({"task_timeout_ms": n(-1)}, "task_timeout_ms"),
        ({"task_timeout_ms": n("1.5")}, "task_timeout_ms"),
        ({"task_timeout_ms": "1000"}, "task_timeout_ms"),
        ({"task_timeout_ms": None}, "task_timeout_ms"),
        ({"task_timeout_ms": n(29_999)}, "retry.attempt_timeout_ms"),  # O-NOTE-4
        ({"recovery_safety": "idempotent"}, "recovery_safety"),
        ({"recovery_safety": "AT_MOST_ONCE"}, "recovery_safety"),
        ({"recovery_safety": None}, "recovery_safety"),
        ({"retry": None}, "retry"),
        ({"retry": []}, "retry"),
        ({"retry": {"max_attempts": n(101)}}, "retry.max_attempts"),
        ({"retry": {"max_attempts": None}}, "retry.max_attempts"),
        ({"retry": {"attempt_timeout_ms": n(86_400_001)}}, "retry.attempt_timeout_ms"),
        ({"retry": {"max_attempts": n(2), "max_delay_ms": n(999)}}, "retry.initial_delay_ms"),
        ({"retry": {"initial_delay_ms": n(1)}}, "retry.initial_delay_ms"),  # single attempt
        (
            {"retry": {"max_attempts": n(2), "max_delay_ms": n(9_223_372_036_855)}},
            "retry.max_delay_ms",
        ),
        ({"retry": {"Max_Attempts": n(2)}}, "retry.Max_Attempts"),
        ({"retry": {"jitter": True}}, "retry.jitter"),
        ({"Queue_ID": QUEUE}, "Queue_ID"),
        ({"namespace_id": "3" * 32}, "namespace_id"),
    ],
)
def test_o_sub_3_field_rejected(changes: dict[str, Any], field: str) -> None:
    """O-SUB-3 / O-API-2: each violation is a 400 naming the field."""
    with pytest.raises(InvalidArgument) as caught:
        parse_submit(body(**changes))
    assert caught.value.field == field


def test_o_api_2_case_variant_names_the_real_field() -> None:
    with pytest.raises(InvalidArgument, match="use 'queue_id'"):
        parse_submit(body(Queue_ID=QUEUE))


@pytest.mark.parametrize(
    "changes",
    [
        {"handler": "h" * 128, "handler_version": "v" * 64, "payload_version": "p" * 32},
        {"handler": "9a_b.c:d-e"},
        {"payload": "x" * 262_142},  # exactly 262,144 bytes (O-NOTE-3)
        {"payload": JsonNumber("0")},
        {"payload": []},
        {"business_key": "é" * 191},
        {"available_at": None, "start_deadline_at": None},
        {"task_timeout_ms": n(2_592_000_000)},
        {"recovery_safety": "IDEMPOTENT"},
        {"retry": {"max_attempts": n(100)}},
    ],
)
def test_o_sub_3_field_accepted(changes: dict[str, Any]) -> None:
    """O-SUB-3 / O-NOTE-3: the bounds are inclusive."""
    assert parse_submit(body(**changes)).queue_id == QUEUE


def at(delta_ms: int) -> str:
    return format_time(NOW + timedelta(milliseconds=delta_ms))


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"available_at": at(-1001)}, "available_at"),
        ({"available_at": at(86_400_000)}, "available_at"),
        ({"start_deadline_at": at(0)}, "start_deadline_at"),
        ({"start_deadline_at": at(-5)}, "start_deadline_at"),
        ({"available_at": at(5000), "start_deadline_at": at(4000)}, "start_deadline_at"),
        ({"start_deadline_at": at(86_400_001)}, "start_deadline_at"),
    ],
)
def test_o_sub_3_time_rules_rejected(changes: dict[str, Any], field: str) -> None:
    """O-SUB-3: available_at within 1 s of the past and before the deadline; start_deadline_at
    in the future, not before available_at, not after the deadline."""
    with pytest.raises(InvalidArgument) as caught:
        plan_times(parse_submit(body(**changes)), NOW)
    assert caught.value.field == field


@pytest.mark.parametrize(
    "changes",
    [
        {"available_at": at(-1000)},
        {"available_at": at(86_399_999)},
        {"start_deadline_at": at(1)},
        {"start_deadline_at": at(86_400_000)},
        {"available_at": at(5000), "start_deadline_at": at(5000)},
    ],
)
def test_o_sub_3_time_rules_accepted(changes: dict[str, Any]) -> None:
    times = plan_times(parse_submit(body(**changes)), NOW)
    assert times.deadline_at == NOW + timedelta(days=1)


def test_o_note_4_explicit_times_are_kept_in_utc() -> None:
    request = parse_submit(body(available_at="2026-09-17T08:00:05+08:00"))
    assert plan_times(request, NOW).available_at == NOW + timedelta(seconds=5)


def test_whole_body_from_text() -> None:
    text = (
        '{"queue_id":"' + QUEUE + '","handler":"h","handler_version":"v1",'
        '"payload_version":"v1","payload":{"seq":9007199254740993}}'
    )
    request = parse_submit(read_json_text(text))
    assert request.payload_text == '{"seq":9007199254740993}'


@pytest.mark.parametrize("value", [[], "x", JsonNumber("1"), None])
def test_body_must_be_an_object(value: object) -> None:
    with pytest.raises(InvalidArgument, match="JSON object"):
        parse_submit(value)  # type: ignore[arg-type]

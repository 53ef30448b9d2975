"""`client.schedules` without a server: what each operation sends and how it reads the answer,
the same for `Client` and `AsyncClient` (one definition serves both), and the arguments the SDK
refuses before any request (docs/orbit/schedules.md)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import httpx
import pytest

import agentcall.orbit.sdk.client as sdk
from agentcall.orbit.sdk.client import schedules_calls as calls

pytestmark = pytest.mark.unit
SID, QUEUE, TASK = "5" * 32, "1" * 32, "2" * 32
T0 = datetime(2026, 12, 2, 19, 0, tzinfo=UTC)
FIRING = {
    "id": "6" * 32,
    "schedule_id": SID,
    "nominal_at": "2026-12-02T19:00:00Z",
    "fired_at": "2026-12-02T19:00:00.031Z",
    "kind": "scheduled",
    "outcome": "fired",
    "task_id": TASK,
    "deduplicated": False,
    "slots": 1,
}
SCHEDULE = {
    "id": SID,
    "revision": "3",
    "state": "active",
    "note": None,
    "template": {
        "queue_id": QUEUE,
        "handler": "reports.daily",
        "handler_version": "1",
        "payload_version": "1",
        "payload": {"n": 9007199254740993, "d": 1.10},
        "task_timeout_ms": 86400000,
        "recovery_safety": "RECONCILE_ONLY",
        "retry": {
            "max_attempts": 1,
            "initial_delay_ms": 0,
            "max_delay_ms": 0,
            "attempt_timeout_ms": 30000,
        },
    },
    "spec": {"cron": "30 2 * * *", "time_zone": "Europe/Berlin"},
    "start_at": None,
    "end_at": None,
    "jitter_ms": 0,
    "catchup_window_ms": 300000,
    "overlap": "skip",
    "next_fire_at": "2026-12-03T01:30:00Z",
    "last_firing": FIRING,
    "created_at": "2026-12-02T18:00:00Z",
    "updated_at": "2026-12-02T18:30:00Z",
    "a_future_field": True,
}
TEMPLATE = sdk.TaskTemplate(QUEUE, "reports.daily", "1", "1", {"d": Decimal("1.10")})
CREATE = sdk.CreateScheduleRequest(
    TEMPLATE, sdk.ScheduleSpec.of_cron("30 2 * * *", "Europe/Berlin"), overlap="skip"
)

# (operation name, args, method, path, query, body or None, idempotency key or None, data)
CASES: list[tuple[str, tuple[Any, ...], str, str, dict[str, str], Any, str | None, Any]] = [
    (
        "create",
        ("k-1", CREATE),
        "POST",
        "/v1/schedules",
        {},
        {
            "template": {
                "queue_id": QUEUE,
                "handler": "reports.daily",
                "handler_version": "1",
                "payload_version": "1",
                "payload": {"d": 1.10},
            },
            "spec": {"cron": "30 2 * * *", "time_zone": "Europe/Berlin"},
            "overlap": "skip",
        },
        "k-1",
        {"schedule": SCHEDULE, "deduplicated": False},
    ),
    ("get", (SID,), "GET", f"/v1/schedules/{SID}", {}, None, None, SCHEDULE),
    (
        "list",
        (QUEUE, "paused", 5, "c1"),
        "GET",
        "/v1/schedules",
        {"queue_id": QUEUE, "state": "paused", "limit": "5", "cursor": "c1"},
        None,
        None,
        {"items": [SCHEDULE], "next_cursor": "c2"},
    ),
    (
        "update",
        (SID, sdk.UpdateScheduleRequest(3, overlap="allow", note=None, jitter_ms=500)),
        "PATCH",
        f"/v1/schedules/{SID}",
        {},
        {"expected_revision": "3", "jitter_ms": 500, "overlap": "allow", "note": None},
        None,
        SCHEDULE,
    ),
    (
        "pause",
        (SID, 3, "maintenance"),
        "POST",
        f"/v1/schedules/{SID}:pause",
        {},
        {"expected_revision": "3", "note": "maintenance"},
        None,
        SCHEDULE,
    ),
    (
        "resume",
        (SID, 4),
        "POST",
        f"/v1/schedules/{SID}:resume",
        {},
        {"expected_revision": "4"},
        None,
        SCHEDULE,
    ),
    (
        "trigger",
        (SID, "t-1"),
        "POST",
        f"/v1/schedules/{SID}:trigger",
        {},
        {},
        "t-1",
        {"firing": dict(FIRING, kind="trigger", outcome="triggered"), "deduplicated": True},
    ),
    (
        "backfill",
        (SID, T0, T0.replace(hour=21)),
        "POST",
        f"/v1/schedules/{SID}:backfill",
        {},
        {"from": "2026-12-02T19:00:00Z", "to": "2026-12-02T21:00:00Z", "preview": False},
        None,
        {"slots": ["2026-12-02T19:00:00Z"], "firings": [FIRING]},
    ),
    (
        "preview_backfill",
        (SID, T0, T0.replace(hour=21)),
        "POST",
        f"/v1/schedules/{SID}:backfill",
        {},
        {"from": "2026-12-02T19:00:00Z", "to": "2026-12-02T21:00:00Z", "preview": True},
        None,
        {"slots": ["2026-12-02T19:00:00Z", "2026-12-02T20:00:00Z"], "firings": []},
    ),
    (
        "next_times",
        (SID, 3),
        "GET",
        f"/v1/schedules/{SID}/next",
        {"count": "3"},
        None,
        None,
        {"times": ["2026-12-03T01:30:00Z", "2026-12-04T01:30:00Z"]},
    ),
    (
        "firings",
        (SID, 7),
        "GET",
        f"/v1/schedules/{SID}/firings",
        {"limit": "7"},
        None,
        None,
        {"items": [FIRING]},
    ),
    (
        "delete",
        (SID, 5),
        "DELETE",
        f"/v1/schedules/{SID}",
        {"expected_revision": "5"},
        None,
        None,
        {"id": SID, "deleted": True},
    ),
]
IDS = [case[0] for case in CASES]


def _transport(status: int, data: Any, seen: list[httpx.Request]) -> Callable[..., Any]:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, content=json.dumps({"request_id": "r1", "data": data}))

    return handler


def _check(request: httpx.Request, case: tuple[Any, ...]) -> None:
    _, _, method, path, query, body, key, _ = case
    assert request.method == method and request.url.path == path
    assert dict(request.url.params) == query
    assert request.headers.get("idempotency-key") == key
    if body is None:
        assert request.content == b""
    else:
        assert request.headers["content-type"] == "application/json"
        assert json.loads(request.content) == body


def _status(name: str) -> int:
    return 201 if name in ("create", "trigger") else 200


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_each_operation_sends_its_request(case: tuple[Any, ...]) -> None:
    name, args = case[0], case[1]
    seen: list[httpx.Request] = []
    transport = httpx.MockTransport(_transport(_status(name), case[7], seen))
    with sdk.Client("http://orbit", "orb_t", transport=transport) as client:
        getattr(client.schedules, name)(*args)
    assert len(seen) == 1 and seen[0].headers["authorization"] == "Bearer orb_t"
    _check(seen[0], case)


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_the_async_client_sends_the_same_and_reads_the_same(case: tuple[Any, ...]) -> None:
    name, args = case[0], case[1]
    seen: list[httpx.Request] = []
    sync_seen: list[httpx.Request] = []
    transport = httpx.MockTransport(_transport(_status(name), case[7], seen))
    sync_transport = httpx.MockTransport(_transport(_status(name), case[7], sync_seen))
    async with sdk.AsyncClient("http://orbit", "orb_t", transport=transport) as client:
        answer = await getattr(client.schedules, name)(*args)
    with sdk.Client("http://orbit", "orb_t", transport=sync_transport) as blocking:
        expected = getattr(blocking.schedules, name)(*args)
    _check(seen[0], case)
    assert answer == expected


def test_answers_are_typed_with_exact_numbers() -> None:
    seen: list[httpx.Request] = []
    data = {"schedule": SCHEDULE, "deduplicated": True}
    transport = httpx.MockTransport(_transport(200, data, seen))
    with sdk.Client("http://orbit", "t", transport=transport) as client:
        receipt = client.schedules.create("k", CREATE)
    schedule = receipt.schedule
    assert receipt.deduplicated and receipt.request_id == "r1"
    assert schedule.revision == 3 and schedule.state == "active"
    assert schedule.template.payload == {"n": 9007199254740993, "d": Decimal("1.10")}
    assert schedule.template.retry == sdk.RetryPolicy(1, 0, 0, 30000)
    assert schedule.spec.describe() == "cron 30 2 * * * Europe/Berlin"
    assert schedule.next_fire_at == datetime(2026, 12, 3, 1, 30, tzinfo=UTC)
    assert schedule.last_firing is not None and schedule.last_firing.task_id == TASK
    interval = sdk.ScheduleSpec.from_json(
        {"interval_ms": 60000, "anchor_at": "2026-12-02T00:00:00Z"}
    )
    assert interval.describe() == "every 60 s" and interval.anchor_at == T0.replace(hour=0)


def test_iter_follows_next_cursor_both_ways() -> None:
    pages = {
        None: {"items": [SCHEDULE], "next_cursor": "c2"},
        "c2": {"items": [dict(SCHEDULE, id="7" * 32)]},
    }

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.params["limit"] == "100"
        data = pages[request.url.params.get("cursor")]
        return httpx.Response(200, content=json.dumps({"request_id": "r", "data": data}))

    with sdk.Client("http://o", "t", transport=httpx.MockTransport(handler)) as client:
        assert [s.id for s in client.schedules.iter()] == [SID, "7" * 32]

    async def walk() -> list[str]:
        transport = httpx.MockTransport(handler)
        async with sdk.AsyncClient("http://o", "t", transport=transport) as client:
            return [s.id async for s in client.schedules.iter()]

    assert asyncio.run(walk()) == [SID, "7" * 32]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: calls.get("../v1/tasks"), "32 lowercase"),
        (lambda: calls.next_times(SID, 0), "count must be 1-100"),
        (lambda: calls.firings(SID, 101), "limit must be 1-100"),
        (lambda: calls.list_page(limit=0), "limit must be 1-100"),
        (lambda: calls.backfill(SID, T0.replace(tzinfo=None), T0), "timezone-aware"),
    ],
)
def test_arguments_refused_before_any_request(build: Callable[[], Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()


def test_an_api_error_is_the_typed_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = {"request_id": "r", "error": {"code": "STATE_CONFLICT", "message": "revision 4"}}
        return httpx.Response(409, content=json.dumps(body))

    with sdk.Client("http://o", "t", transport=httpx.MockTransport(handler)) as client:
        with pytest.raises(sdk.StateConflictError, match="revision 4"):
            client.schedules.pause(SID, 3)


def test_the_float_guard_holds_for_templates() -> None:
    template = sdk.TaskTemplate(QUEUE, "h", "1", "1", {"x": 0.1})
    request = sdk.CreateScheduleRequest(template, sdk.ScheduleSpec.of_interval(60000))
    with pytest.raises(TypeError, match="Decimal"):
        calls.create("k", request)

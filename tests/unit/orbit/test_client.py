"""The SDK without a server: public surface, exact numbers, error mapping, no write retries
(httpx.MockTransport behind the SDK's own transport port)."""

from __future__ import annotations

import json
from decimal import Decimal

import httpx
import pytest

import agentcall.orbit.sdk.client as sdk
from agentcall.orbit.sdk.client import _calls

pytestmark = pytest.mark.unit

TASK = {
    "id": "2" * 32,
    "namespace_id": "3" * 32,
    "queue_id": "1" * 32,
    "state": "WAITING",
    "revision": "1",
    "handler": "h",
    "handler_version": "v1",
    "payload_version": "v1",
    "payload": {"n": 9007199254740993, "d": 1.10},
    "available_at": "2026-09-17T00:00:00Z",
    "deadline_at": "2026-09-18T00:00:00Z",
    "recovery_safety": "RECONCILE_ONLY",
    "retry": {
        "max_attempts": 1,
        "initial_delay_ms": 0,
        "max_delay_ms": 0,
        "attempt_timeout_ms": 30000,
    },
    "attempt_count": 0,
    "created_at": "2026-09-17T00:00:00Z",
    "updated_at": "2026-09-17T00:00:00Z",
    "some_future_field": True,
}
REQUEST = sdk.SubmitTaskRequest("1" * 32, "h", "v1", "v1", {"n": Decimal("1.10")})


def test_public_surface_is_guarded() -> None:
    """The SDK's public names are exactly these (changing them is a contract change)."""
    assert sorted(sdk.__all__) == sorted(
        [
            "APIError",
            "AsyncClient",
            "BodyTooLargeError",
            "CancelTaskRequest",
            "Client",
            "IdempotencyConflictError",
            "InvalidArgumentError",
            "ListTasksRequest",
            "NotFoundError",
            "OrbitClientError",
            "PermissionDeniedError",
            "RetryPolicy",
            "StateConflictError",
            "SubmitTaskRequest",
            "TASK_STATES",
            "Task",
            "TaskPage",
            "TaskReceipt",
            "TaskSummary",
            "TransportError",
            "UnauthenticatedError",
            "UnavailableError",
            "UnsupportedMediaTypeError",
            "Attempt",
            "AttemptError",
            "AttemptOutcome",
            "AttemptPage",
            "AttemptWorker",
            "Evidence",
            "ListAttemptsRequest",
            "BatchItem",
            "BatchReceipt",
            "ResolveTaskRequest",
            "RetryTaskRequest",  # task control
            "QueueInfo",
            "QueueFlowInfo",
            "KeyRunning",
            "WorkerInfo",
            "SETTLED_STATES",  # inspection and waiting
            "AsyncBulk",
            "Bulk",
            "BULK_ACTIONS",
            "BULK_OUTCOMES",
            "BULK_STATES",
            "BulkFilter",
            "BulkOperation",
            "BulkOperationPage",
            "BulkPreview",
            "BulkRequest",
            "BulkStarted",
            "BulkTask",
            "BulkTaskPage",  # bulk operations
            "AsyncSchedules",
            "Backfill",
            "CreateScheduleRequest",
            "FIRING_OUTCOMES",
            "Firing",
            "OVERLAP_POLICIES",
            "SCHEDULE_STATES",
            "Schedule",
            "SchedulePage",
            "ScheduleReceipt",
            "ScheduleSpec",
            "Schedules",
            "TaskTemplate",
            "TriggerReceipt",
            "UNCHANGED",
            "UpdateScheduleRequest",  # schedules
            "AsyncAudit",
            "Audit",
            "AuditEntry",
            "AuditPage",  # the audit log
        ]
    )
    for name in sdk.__all__:
        assert getattr(sdk, name) is not None


def test_exact_numbers_both_ways() -> None:
    """O-SUB-2: ints stay ints, other numbers Decimal; float is refused on the way out."""
    decoded = _calls.loads(b'{"n":9007199254740993,"d":1.10,"e":1E+2}')
    assert decoded == {"n": 9007199254740993, "d": Decimal("1.10"), "e": Decimal("1E+2")}
    assert str(decoded["d"]) == "1.10"
    assert _calls.encode(decoded) == b'{"n":9007199254740993,"d":1.10,"e":1E+2}'
    with pytest.raises(TypeError, match="Decimal"):
        _calls.encode({"x": 0.1})
    body = REQUEST.to_json()
    assert body == {
        "queue_id": "1" * 32,
        "handler": "h",
        "handler_version": "v1",
        "payload_version": "v1",
        "payload": {"n": Decimal("1.10")},
    }


def reply(status: int, body: object, seen: list[httpx.Request]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, content=json.dumps(body).encode())

    return httpx.MockTransport(handler)


def test_submit_request_and_typed_receipt() -> None:
    seen: list[httpx.Request] = []
    body = {"request_id": "4" * 32, "data": {"deduplicated": False, "task": TASK}}
    with sdk.Client("http://orbit", "orb_t", transport=reply(201, body, seen)) as client:
        receipt = client.submit_task("key-1", REQUEST)
    request = seen[0]
    assert request.method == "POST" and request.url.path == "/v1/tasks"
    assert request.headers["authorization"] == "Bearer orb_t"
    assert request.headers["idempotency-key"] == "key-1"
    assert request.headers["content-type"] == "application/json"
    assert receipt.task.payload == {"n": 9007199254740993, "d": Decimal("1.10")}
    assert receipt.task.revision == 1 and receipt.deduplicated is False
    assert receipt.request_id == "4" * 32


@pytest.mark.parametrize(
    ("status", "code", "cls"),
    [
        (400, "INVALID_ARGUMENT", sdk.InvalidArgumentError),
        (401, "UNAUTHENTICATED", sdk.UnauthenticatedError),
        (403, "PERMISSION_DENIED", sdk.PermissionDeniedError),
        (404, "NOT_FOUND", sdk.NotFoundError),
        (409, "IDEMPOTENCY_CONFLICT", sdk.IdempotencyConflictError),
        (409, "STATE_CONFLICT", sdk.StateConflictError),
        (413, "BODY_TOO_LARGE", sdk.BodyTooLargeError),
        (415, "UNSUPPORTED_MEDIA_TYPE", sdk.UnsupportedMediaTypeError),
        (503, "UNAVAILABLE", sdk.UnavailableError),
        (418, "SOMETHING_NEW", sdk.APIError),
    ],
)
def test_o_err_1_typed_errors(status: int, code: str, cls: type[sdk.APIError]) -> None:
    """O-ERR-1: every error code has its exception class; writes are sent exactly once."""
    seen: list[httpx.Request] = []
    body = {"request_id": "4" * 32, "error": {"code": code, "message": "m"}}
    with sdk.Client("http://orbit", "t", transport=reply(status, body, seen)) as client:
        with pytest.raises(cls) as caught:
            client.cancel_task("2" * 32, "k", sdk.CancelTaskRequest(1, "r"))
    assert type(caught.value) is cls and caught.value.code == code
    assert caught.value.request_id == "4" * 32 and len(seen) == 1


def test_transport_failure_is_not_retried() -> None:
    calls: list[httpx.Request] = []

    def broken(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ConnectError("refused")

    with sdk.Client("http://orbit", "t", transport=httpx.MockTransport(broken)) as client:
        with pytest.raises(sdk.TransportError, match="outcome unknown"):
            client.submit_task("k", REQUEST)
    assert len(calls) == 1


def test_non_orbit_error_bodies() -> None:
    def proxy(request: httpx.Request) -> httpx.Response:
        return httpx.Response(502, text="<html>bad gateway</html>")

    with sdk.Client("http://orbit", "t", transport=httpx.MockTransport(proxy)) as client:
        with pytest.raises(sdk.UnavailableError):
            client.get_task("2" * 32)
        with pytest.raises(ValueError, match="32 lowercase"):
            client.get_task("../etc")


async def test_async_client_pages() -> None:
    pages = {
        None: {"items": [dict(TASK, id="a" * 32)], "next_cursor": "c2"},
        "c2": {"items": [dict(TASK, id="b" * 32)]},
    }

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.params["queue_id"] == "1" * 32
        data = pages[request.url.params.get("cursor")]
        return httpx.Response(200, json={"request_id": "4" * 32, "data": data})

    async with sdk.AsyncClient("http://orbit", "t", transport=httpx.MockTransport(handler)) as c:
        ids = [item.id async for item in c.iter_tasks(sdk.ListTasksRequest("1" * 32))]
    assert ids == ["a" * 32, "b" * 32]

"""The SDK's task control calls: what they send and how they read the answer
(docs/orbit/task-control.md)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from agentcall.orbit.api.app import openapi_text
from agentcall.orbit.sdk.client import (
    BatchItem,
    InvalidArgumentError,
    ResolveTaskRequest,
    RetryTaskRequest,
    SubmitTaskRequest,
)
from agentcall.orbit.sdk.client._calls import read_response
from agentcall.orbit.sdk.client.control import resolve_task, retry_task, submit_batch

pytestmark = pytest.mark.unit
TASK = "a" * 32


@pytest.mark.parametrize(
    ("call", "path", "body"),
    [
        (
            retry_task(TASK, "k", RetryTaskRequest(3, "again")),
            f"/v1/tasks/{TASK}:retry",
            {"expected_revision": "3", "reason": "again"},
        ),
        (
            resolve_task(
                TASK, "k", ResolveTaskRequest(4, "succeeded", "ok", result={"n": Decimal("1.10")})
            ),
            f"/v1/tasks/{TASK}:resolve",
            {
                "expected_revision": "4",
                "outcome": "succeeded",
                "reason": "ok",
                "result": {"n": Decimal("1.10")},
            },
        ),
        (
            resolve_task(
                TASK,
                "k",
                ResolveTaskRequest(
                    4,
                    "failed",
                    "no",
                    error_code="c",
                    error_message="m",
                    evidence=[{"key": "e", "kind": "note", "data": 1}],
                ),
            ),
            f"/v1/tasks/{TASK}:resolve",
            {
                "expected_revision": "4",
                "outcome": "failed",
                "reason": "no",
                "error": {"code": "c", "message": "m"},
                "evidence": [{"key": "e", "kind": "note", "data": 1}],
            },
        ),
        (
            submit_batch("k", [SubmitTaskRequest("q" * 32, "h", "v1", "v1", {"x": 1})]),
            "/v1/tasks:batch",
            {
                "tasks": [
                    {
                        "queue_id": "q" * 32,
                        "handler": "h",
                        "handler_version": "v1",
                        "payload_version": "v1",
                        "payload": {"x": 1},
                    }
                ]
            },
        ),
    ],
)
def test_calls_send_the_documented_request(call: Any, path: str, body: Any) -> None:
    assert (call.method, call.path) == ("POST", path)
    assert call.headers["Idempotency-Key"] == "k"
    assert json.loads(call.content, parse_float=Decimal) == body
    assert call.ok == {200, 201}


@pytest.mark.parametrize("size", [0, 101])
def test_batch_size_is_checked_before_sending(size: int) -> None:
    with pytest.raises(ValueError, match="1-100"):
        submit_batch("k", [SubmitTaskRequest("q" * 32, "h", "v", "v", 1)] * size)


def test_batch_receipt_is_read() -> None:
    call = submit_batch("k", [SubmitTaskRequest("q" * 32, "h", "v", "v", 1)])
    body = {
        "request_id": "r" * 32,
        "data": {
            "deduplicated": True,
            "items": [{"index": 0, "task_id": TASK, "state": "WAITING", "revision": "1"}],
        },
    }
    receipt = read_response(call, 200, json.dumps(body).encode())
    assert receipt.deduplicated and receipt.request_id == "r" * 32
    assert receipt.items == [BatchItem(0, TASK, "WAITING", 1)]


def test_openapi_request_schemas_match_the_readers() -> None:
    """The documented task control request bodies have exactly the fields the readers accept."""
    schemas = json.loads(openapi_text())["components"]["schemas"]
    assert set(schemas["RetryTaskRequest"]["properties"]) == {"expected_revision", "reason"}
    assert set(schemas["ResolveTaskRequest"]["properties"]) == {
        "expected_revision",
        "reason",
        "outcome",
        "result",
        "error",
        "evidence",
    }
    assert set(schemas["BatchSubmitRequest"]["properties"]) == {"tasks"}
    assert set(schemas["BatchReceipt"]["properties"]) == {"deduplicated", "items"}


def test_refused_batch_lists_its_items_in_the_error() -> None:
    call = submit_batch("k", [SubmitTaskRequest("q" * 32, "h", "v", "v", 1)])
    body = {
        "request_id": "r" * 32,
        "error": {
            "code": "INVALID_ARGUMENT",
            "message": "m",
            "items": [{"index": 0, "field": "handler", "message": "bad"}],
        },
    }
    with pytest.raises(InvalidArgumentError) as caught:
        read_response(call, 400, json.dumps(body).encode())
    assert caught.value.items == ({"index": 0, "field": "handler", "message": "bad"},)

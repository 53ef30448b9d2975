"""Request building and response parsing shared by `Client` and `AsyncClient`: each API
operation is a `Call` (what to send, how to read the answer); only sending differs."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Generic, TypeVar

from agentcall.orbit.domain.jsonvalue import dumps
from agentcall.orbit.sdk.client.errors import ERRORS_BY_CODE, APIError, UnavailableError
from agentcall.orbit.sdk.client.models import (
    CancelTaskRequest,
    ListTasksRequest,
    SubmitTaskRequest,
    Task,
    TaskPage,
    TaskReceipt,
    TaskSummary,
)

T = TypeVar("T")
_ID_CHARS = frozenset("0123456789abcdef")


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    method: str
    path: str
    parse: Callable[[Any, str], T]  # (data, request_id) -> result
    ok: frozenset[int] = frozenset({200})
    params: Mapping[str, str] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    content: bytes | None = None
    timeout: float | None = None  # the read timeout of this call (a long-poll), else the client's


def loads(body: bytes) -> Any:
    """Exact numbers: integers as int, everything else as Decimal (never float)."""
    return json.loads(body, parse_float=Decimal, parse_constant=_no_constant)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def encode(value: Any) -> bytes:
    """Compact JSON; Decimal written exactly; float refused (use Decimal or int)."""
    return dumps(value).encode("utf-8")


def _write(method: str, path: str, key: str, body: Any, parse: Callable[[Any, str], T]) -> Call[T]:
    return Call(
        method,
        path,
        parse,
        ok=frozenset({200, 201}),
        headers={"Content-Type": "application/json", "Idempotency-Key": key},
        content=encode(body),
    )


def _receipt(data: Any, request_id: str) -> TaskReceipt:
    return TaskReceipt(Task.from_json(data["task"]), bool(data["deduplicated"]), request_id)


def _page(data: Any, request_id: str) -> TaskPage:
    items = [TaskSummary.from_json(item) for item in data["items"]]
    return TaskPage(items, data.get("next_cursor"))


def checked_id(value: str, name: str) -> str:
    """`value` when it is an Orbit id (32 lowercase hexadecimal characters); ValueError naming
    `name` otherwise, before anything is sent."""
    if len(value) != 32 or not set(value) <= _ID_CHARS:
        raise ValueError(f"{name} must be 32 lowercase hexadecimal characters")
    return value


def _task_path(task_id: str) -> str:
    return f"/v1/tasks/{checked_id(task_id, 'task_id')}"


def submit_task(key: str, request: SubmitTaskRequest) -> Call[TaskReceipt]:
    return _write("POST", "/v1/tasks", key, request.to_json(), _receipt)


def get_task(task_id: str) -> Call[Task]:
    return Call("GET", _task_path(task_id), lambda data, _: Task.from_json(data))


def list_tasks(request: ListTasksRequest) -> Call[TaskPage]:
    return Call("GET", "/v1/tasks", _page, params=request.to_params())


def cancel_task(task_id: str, key: str, request: CancelTaskRequest) -> Call[TaskReceipt]:
    return _write("POST", _task_path(task_id) + ":cancel", key, request.to_json(), _receipt)


def read_response(call: Call[T], status: int, body: bytes) -> T:
    """The parsed result, or the typed APIError for the error code."""
    try:
        document = loads(body)
    except ValueError:
        document = None
    if not isinstance(document, dict):
        raise _unreadable(status)
    request_id = document.get("request_id")
    if status in call.ok and "data" in document:
        return call.parse(document["data"], str(request_id))
    error = document.get("error") or {}
    code, message = str(error.get("code", "UNKNOWN")), str(error.get("message", ""))
    items = error.get("items")
    details = tuple(i for i in items if isinstance(i, dict)) if isinstance(items, list) else ()
    raise ERRORS_BY_CODE.get(code, APIError)(status, code, message, request_id, details)


def _unreadable(status: int) -> APIError:
    if status >= 500:
        return UnavailableError(status, "UNAVAILABLE", "no Orbit error body (proxy?)", None)
    return APIError(status, "UNKNOWN", "the response is not an Orbit JSON body", None)

"""Task control in the SDK (docs/orbit/task-control.md): manual retry, resolve and batch
submit — their request models and `Call`s. Like every write, they are never retried by the
SDK: resend the same request with the same key after `TransportError` or `UnavailableError`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agentcall.orbit.sdk.client._calls import Call, _receipt, _task_path, _write
from agentcall.orbit.sdk.client.models import SubmitTaskRequest, TaskReceipt

MAX_BATCH = 100


@dataclass(frozen=True, slots=True)
class RetryTaskRequest:
    """FAILED or NEEDS_REVIEW → WAITING with one more attempt (tasks:review)."""

    expected_revision: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"expected_revision": str(self.expected_revision), "reason": self.reason}


@dataclass(frozen=True, slots=True)
class ResolveTaskRequest:
    """NEEDS_REVIEW → SUCCEEDED (`result`) or FAILED (`error_code` + `error_message`), with
    evidence items shaped like the worker protocol's (key, kind, uri/data, ...)."""

    expected_revision: int
    outcome: Literal["succeeded", "failed"]
    reason: str
    result: Any = None
    error_code: str | None = None
    error_message: str | None = None
    evidence: Sequence[dict[str, Any]] = ()

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "expected_revision": str(self.expected_revision),
            "outcome": self.outcome,
            "reason": self.reason,
        }
        if self.outcome == "succeeded":
            body["result"] = self.result
        else:
            body["error"] = {"code": self.error_code, "message": self.error_message}
        if self.evidence:
            body["evidence"] = list(self.evidence)
        return body


@dataclass(frozen=True, slots=True)
class BatchItem:
    index: int
    task_id: str
    state: str
    revision: int


@dataclass(frozen=True, slots=True)
class BatchReceipt:
    """One item per submitted task, in order. A replay (same key, same content) answers the
    first receipt with `deduplicated=True`."""

    items: list[BatchItem]
    deduplicated: bool
    request_id: str


def retry_task(task_id: str, key: str, request: RetryTaskRequest) -> Call[TaskReceipt]:
    return _write("POST", _task_path(task_id) + ":retry", key, request.to_json(), _receipt)


def resolve_task(task_id: str, key: str, request: ResolveTaskRequest) -> Call[TaskReceipt]:
    return _write("POST", _task_path(task_id) + ":resolve", key, request.to_json(), _receipt)


def submit_batch(key: str, requests: Sequence[SubmitTaskRequest]) -> Call[BatchReceipt]:
    if not 1 <= len(requests) <= MAX_BATCH:
        raise ValueError(f"a batch holds 1-{MAX_BATCH} tasks")
    body = {"tasks": [request.to_json() for request in requests]}
    return _write("POST", "/v1/tasks:batch", key, body, _batch)


def _batch(data: Any, request_id: str) -> BatchReceipt:
    items = [
        BatchItem(int(i["index"]), str(i["task_id"]), str(i["state"]), int(i["revision"]))
        for i in data["items"]
    ]
    return BatchReceipt(items, bool(data["deduplicated"]), request_id)

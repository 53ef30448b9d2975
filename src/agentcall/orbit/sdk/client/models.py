"""Typed requests and responses. Numbers in payloads are `int` or `Decimal`, never float;
unknown response fields are ignored (forward compatible)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentcall.orbit.domain.times import format_time, parse_time

TASK_STATES = (
    "WAITING",
    "LEASED",
    "RUNNING",
    "NEEDS_REVIEW",
    "SUCCEEDED",
    "FAILED",
    "CANCELLED",
)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Omitted (None) fields take the server defaults."""

    max_attempts: int | None = None
    initial_delay_ms: int | None = None
    max_delay_ms: int | None = None
    attempt_timeout_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        return _without_none(
            max_attempts=self.max_attempts,
            initial_delay_ms=self.initial_delay_ms,
            max_delay_ms=self.max_delay_ms,
            attempt_timeout_ms=self.attempt_timeout_ms,
        )


@dataclass(frozen=True, slots=True)
class SubmitTaskRequest:
    queue_id: str
    handler: str
    handler_version: str
    payload_version: str
    payload: Any
    business_key: str | None = None
    available_at: datetime | None = None
    start_deadline_at: datetime | None = None
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
            business_key=self.business_key,
            available_at=_time(self.available_at),
            start_deadline_at=_time(self.start_deadline_at),
            task_timeout_ms=self.task_timeout_ms,
            recovery_safety=self.recovery_safety,
            retry=None if self.retry is None else self.retry.to_json(),
        )


@dataclass(frozen=True, slots=True)
class CancelTaskRequest:
    expected_revision: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"expected_revision": str(self.expected_revision), "reason": self.reason}


def page_params(limit: int | None, cursor: str | None) -> dict[str, str]:
    """The keyset paging query parameters every listing takes."""
    params = {"limit": str(limit)} if limit is not None else {}
    return params | ({"cursor": cursor} if cursor is not None else {})


@dataclass(frozen=True, slots=True)
class ListTasksRequest:
    """A queue's tasks, newest first, narrowed by the search filter (docs/orbit/search.md):
    exact handler, handler_version (with a handler), business key exact or by prefix, error
    code, state, and created/completed ranges (`*_from` inclusive, `*_before` exclusive)."""

    queue_id: str
    state: str | None = None
    limit: int | None = None
    cursor: str | None = None
    handler: str | None = None
    handler_version: str | None = None
    business_key: str | None = None
    business_key_prefix: str | None = None
    error_code: str | None = None
    created_from: datetime | None = None
    created_before: datetime | None = None
    completed_from: datetime | None = None
    completed_before: datetime | None = None

    def to_params(self) -> dict[str, str]:
        params = {"queue_id": self.queue_id}
        texts = {
            "state": self.state,
            "handler": self.handler,
            "handler_version": self.handler_version,
            "business_key": self.business_key,
            "business_key_prefix": self.business_key_prefix,
            "error_code": self.error_code,
        }
        params.update({name: value for name, value in texts.items() if value is not None})
        times = {
            "created_from": self.created_from,
            "created_before": self.created_before,
            "completed_from": self.completed_from,
            "completed_before": self.completed_before,
        }
        params.update({name: format_time(t) for name, t in times.items() if t is not None})
        return params | page_params(self.limit, self.cursor)


@dataclass(frozen=True, slots=True)
class TaskSummary:
    id: str
    queue_id: str
    state: str
    revision: int
    handler: str
    handler_version: str
    business_key: str | None
    available_at: datetime
    start_deadline_at: datetime | None
    deadline_at: datetime
    attempt_count: int
    cancel_requested_at: datetime | None
    completed_at: datetime | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TaskSummary:
        return cls(**_summary_fields(data))


@dataclass(frozen=True, slots=True)
class Task(TaskSummary):
    namespace_id: str
    payload_version: str
    payload: Any
    recovery_safety: str
    retry: RetryPolicy
    result: Any | None
    # why a task is FAILED or NEEDS_REVIEW: {"code", "message"} (worker, system or operator)
    error: dict[str, str] | None = None
    # a ready WAITING task held by a flow limit: "concurrency_limit" or "rate_limit"
    waiting_reason: str | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Task:
        retry = data["retry"]
        return cls(
            **_summary_fields(data),
            namespace_id=data["namespace_id"],
            payload_version=data["payload_version"],
            payload=data["payload"],
            recovery_safety=data["recovery_safety"],
            retry=RetryPolicy(
                retry["max_attempts"],
                retry["initial_delay_ms"],
                retry["max_delay_ms"],
                retry["attempt_timeout_ms"],
            ),
            result=data.get("result"),
            error=data.get("error"),
            waiting_reason=data.get("waiting_reason"),
        )


@dataclass(frozen=True, slots=True)
class TaskReceipt:
    """The answer of submit and cancel. `deduplicated` is True for a same-key replay, which
    returns the first receipt (not necessarily the current task: GET it for that)."""

    task: Task
    deduplicated: bool
    request_id: str


@dataclass(frozen=True, slots=True)
class TaskPage:
    items: list[TaskSummary]
    next_cursor: str | None


def _summary_fields(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": data["id"],
        "queue_id": data["queue_id"],
        "state": data["state"],
        "revision": int(data["revision"]),
        "handler": data["handler"],
        "handler_version": data["handler_version"],
        "business_key": data.get("business_key"),
        "available_at": _parse(data["available_at"]),
        "start_deadline_at": _parse(data.get("start_deadline_at")),
        "deadline_at": _parse(data["deadline_at"]),
        "attempt_count": data["attempt_count"],
        "cancel_requested_at": _parse(data.get("cancel_requested_at")),
        "completed_at": _parse(data.get("completed_at")),
        "created_at": _parse(data["created_at"]),
        "updated_at": _parse(data["updated_at"]),
    }


def _parse(value: str | None) -> Any:
    return None if value is None else parse_time(value, "response")


def _time(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        raise ValueError("times must be timezone-aware (e.g. datetime.now(UTC))")
    return format_time(value)


def _without_none(**fields: Any) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}

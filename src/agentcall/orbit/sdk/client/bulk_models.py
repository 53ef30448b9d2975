"""The typed models of bulk operations in the SDK (docs/orbit/bulk.md): the filter (the task
search filter of `GET /v1/tasks`), the request (an action and its fields), the preview, the
operation with its progress, and an operation's tasks with their outcomes."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from agentcall.orbit.domain.times import parse_time
from agentcall.orbit.sdk.client.models import TaskSummary, _time

BULK_ACTIONS = ("cancel", "retry", "resolve")
BULK_STATES = ("RUNNING", "SUCCEEDED", "CANCELLED", "FAILED")
BULK_OUTCOMES = ("DONE", "SKIPPED", "FAILED")


@dataclass(frozen=True, slots=True)
class BulkFilter:
    """Which tasks of a queue: at least one field besides `queue_id` (an empty filter is
    refused). `*_from` times are inclusive, `*_before` exclusive."""

    queue_id: str
    state: str | None = None
    handler: str | None = None
    handler_version: str | None = None
    business_key: str | None = None
    business_key_prefix: str | None = None
    error_code: str | None = None
    created_from: datetime | None = None
    created_before: datetime | None = None
    completed_from: datetime | None = None
    completed_before: datetime | None = None

    def to_json(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, datetime):
                value = _time(value)
            if value is not None:
                out[f.name] = value
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BulkFilter:
        times = {"created_from", "created_before", "completed_from", "completed_before"}
        values: dict[str, Any] = {
            key: (parse_time(value, key) if key in times else value) for key, value in data.items()
        }
        return cls(**values)


@dataclass(frozen=True, slots=True)
class BulkRequest:
    """An action on every task the filter matches: `cancel` and `retry` take a reason;
    `resolve` also an outcome ("succeeded" with `result`, "failed" with `error`
    {code, message}). Each task is written with the revision it had when matched."""

    filter: BulkFilter
    action: str
    reason: str
    outcome: str | None = None
    result: Any = None
    error: dict[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "filter": self.filter.to_json(),
            "action": self.action,
            "reason": self.reason,
        }
        extra = {"outcome": self.outcome, "result": self.result, "error": self.error}
        return body | {key: value for key, value in extra.items() if value is not None}


@dataclass(frozen=True, slots=True)
class BulkPreview:
    matched: int  # counted up to 100,000
    more: bool  # more than that match: a start would be refused
    sample: list[TaskSummary]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BulkPreview:
        sample = [TaskSummary.from_json(item) for item in data["sample"]]
        return cls(int(data["matched"]), bool(data["more"]), sample)


@dataclass(frozen=True, slots=True)
class BulkOperation:
    """An operation and its progress: `done + skipped + failed` of `matched` tasks have an
    outcome. `state` RUNNING until SUCCEEDED (every task reached), CANCELLED or FAILED (its
    token can no longer act; `error` says why)."""

    id: str
    queue_id: str
    filter: BulkFilter
    action: str
    params: dict[str, Any]
    state: str
    matched: int
    done: int
    skipped: int
    failed: int
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None
    error: str | None

    @property
    def reached(self) -> int:
        return self.done + self.skipped + self.failed

    @property
    def finished(self) -> bool:
        return self.state != "RUNNING"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BulkOperation:
        finished = data.get("finished_at")
        return cls(
            id=data["id"],
            queue_id=data["queue_id"],
            filter=BulkFilter.from_json(data["filter"]),
            action=data["action"],
            params=dict(data["params"]),
            state=data["state"],
            matched=int(data["matched"]),
            done=int(data["done"]),
            skipped=int(data["skipped"]),
            failed=int(data["failed"]),
            created_at=parse_time(data["created_at"], "created_at"),
            updated_at=parse_time(data["updated_at"], "updated_at"),
            finished_at=None if finished is None else parse_time(finished, "finished_at"),
            error=data.get("error"),
        )


@dataclass(frozen=True, slots=True)
class BulkStarted:
    operation: BulkOperation
    deduplicated: bool  # the same key and request again: the operation it started
    request_id: str


@dataclass(frozen=True, slots=True)
class BulkOperationPage:
    items: list[BulkOperation]
    next_cursor: str | None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BulkOperationPage:
        items = [BulkOperation.from_json(item) for item in data["items"]]
        return cls(items, data.get("next_cursor"))


@dataclass(frozen=True, slots=True)
class BulkTask:
    """A matched task: the revision it was matched with, and its outcome (None: not reached)
    with the reason of a SKIPPED or FAILED one."""

    task_id: str
    expected_revision: int
    outcome: str | None
    message: str | None


@dataclass(frozen=True, slots=True)
class BulkTaskPage:
    items: list[BulkTask]
    next_cursor: str | None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BulkTaskPage:
        items = [
            BulkTask(
                item["task_id"], int(item["expected_revision"]), item["outcome"], item["message"]
            )
            for item in data["items"]
        ]
        return cls(items, data.get("next_cursor"))

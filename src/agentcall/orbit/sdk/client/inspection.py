"""The inspection calls: queues with counts, connected workers, and waiting for a task to
settle with the long-poll `GET /v1/tasks/{id}?wait_ms=` (docs/orbit/console.md)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentcall.orbit.domain.times import parse_time
from agentcall.orbit.sdk.client._calls import Call, get_task
from agentcall.orbit.sdk.client.models import Task

SETTLED_STATES = frozenset({"SUCCEEDED", "FAILED", "CANCELLED", "NEEDS_REVIEW"})
MAX_WAIT_MS = 60_000
WAIT_MARGIN_S = 10.0  # the HTTP read timeout of a long-poll: its wait plus this


@dataclass(frozen=True, slots=True)
class QueueInfo:
    id: str
    name: str
    counts: dict[str, int]
    oldest_waiting_at: datetime | None  # the oldest WAITING task's creation (scheduled too)
    oldest_waiting_age_ms: int | None
    ready: int = 0  # WAITING tasks available now
    scheduled: int = 0  # WAITING tasks available only later
    oldest_ready_at: datetime | None = None  # the oldest ready task's available_at
    oldest_ready_age_ms: int | None = None  # the backlog's age

    @classmethod
    def from_json(cls, data: Any) -> QueueInfo:
        oldest, ready_at = data.get("oldest_waiting_at"), data.get("oldest_ready_at")
        return cls(
            data["id"],
            data["name"],
            {k: int(v) for k, v in data["counts"].items()},
            None if oldest is None else parse_time(oldest, "oldest_waiting_at"),
            data.get("oldest_waiting_age_ms"),
            int(data.get("ready", 0)),
            int(data.get("scheduled", 0)),
            None if ready_at is None else parse_time(ready_at, "oldest_ready_at"),
            data.get("oldest_ready_age_ms"),
        )


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    connection_id: str
    server: str
    name: str
    instance_id: str
    queues: tuple[str, ...]
    handlers: tuple[tuple[str, str], ...]  # (handler, handler_version)
    slots: int
    in_flight: int
    connected_at: datetime
    last_heartbeat_at: datetime
    sdk: str | None = None
    host: str | None = None
    pid: int | None = None
    queue_names: tuple[str, ...] = ()  # the names of `queues`, in the same order

    @classmethod
    def from_json(cls, data: Any) -> WorkerInfo:
        handlers = tuple((h["handler"], h["handler_version"]) for h in data["handlers"])
        return cls(
            data["connection_id"],
            data["server"],
            data["name"],
            data["instance_id"],
            tuple(data["queues"]),
            handlers,
            int(data["slots"]),
            int(data["in_flight"]),
            parse_time(data["connected_at"], "connected_at"),
            parse_time(data["last_heartbeat_at"], "last_heartbeat_at"),
            data.get("sdk"),
            data.get("host"),
            data.get("pid"),
            tuple(data.get("queue_names", ())),
        )


def list_queues() -> Call[list[QueueInfo]]:
    return Call(
        "GET", "/v1/queues", lambda data, _: [QueueInfo.from_json(item) for item in data["items"]]
    )


def list_workers() -> Call[list[WorkerInfo]]:
    return Call(
        "GET", "/v1/workers", lambda data, _: [WorkerInfo.from_json(item) for item in data["items"]]
    )


def wait_task(task_id: str, wait_ms: int) -> Call[Task]:
    """One long-poll of up to `wait_ms` (0-60000) milliseconds."""
    plain = get_task(task_id)
    return Call(
        plain.method,
        plain.path,
        plain.parse,
        params={"wait_ms": str(wait_ms)},
        timeout=wait_ms / 1000 + WAIT_MARGIN_S,
    )


def next_wait_ms(left_s: float) -> int:
    """The next long-poll's wait: what is left of the caller's timeout, within 0-60000 ms."""
    return max(0, min(MAX_WAIT_MS, int(left_s * 1000)))


def settled(task: Task) -> bool:
    return task.state in SETTLED_STATES

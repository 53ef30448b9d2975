"""Execution history in the SDK (docs/orbit/execution-history.md): typed attempt and
evidence models and the two read calls `GET /v1/tasks/{id}/attempts` (keyset pages) and
`GET /v1/tasks/{id}/attempts/{attempt_id}`. Unknown response fields are ignored."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentcall.orbit.domain.times import parse_time
from agentcall.orbit.sdk.client._calls import Call, checked_id
from agentcall.orbit.sdk.client.models import page_params


@dataclass(frozen=True, slots=True)
class AttemptWorker:
    """Who ran the attempt, as its worker said in `hello`."""

    name: str
    instance_id: str
    connection_id: str
    sdk: str | None = None
    host: str | None = None
    pid: int | None = None


@dataclass(frozen=True, slots=True)
class AttemptError:
    code: str
    message: str
    retryable: bool | None = None  # only for FAILED


@dataclass(frozen=True, slots=True)
class AttemptOutcome:
    """What the attempt's end did to the task."""

    state: str
    revision: int


@dataclass(frozen=True, slots=True)
class Evidence:
    id: str
    key: str
    kind: str  # artifact, reference, note
    created_at: datetime
    name: str | None = None
    uri: str | None = None
    media_type: str | None = None
    size_bytes: int | None = None
    sha256: str | None = None
    data: Any | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Evidence:
        return cls(
            id=data["id"],
            key=data["key"],
            kind=data["kind"],
            created_at=_time(data["created_at"]),
            name=data.get("name"),
            uri=data.get("uri"),
            media_type=data.get("media_type"),
            size_bytes=data.get("size_bytes"),
            sha256=data.get("sha256"),
            data=data.get("data"),
        )


@dataclass(frozen=True, slots=True)
class Attempt:
    """One lease of a task and how it ended. `evidence` is None in list pages (use
    `get_attempt` for it) and a list in the detail view."""

    id: str
    task_id: str
    number: int
    state: str
    worker: AttemptWorker
    leased_at: datetime
    attempt_deadline_at: datetime
    evidence_count: int
    lease_expires_at: datetime | None = None
    started_at: datetime | None = None
    last_heartbeat_at: datetime | None = None
    ended_at: datetime | None = None
    duration_ms: int | None = None
    end_reason: str | None = None
    error: AttemptError | None = None
    task_outcome: AttemptOutcome | None = None
    evidence: list[Evidence] | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Attempt:
        worker, error, outcome = data["worker"], data.get("error"), data.get("task_outcome")
        evidence = data.get("evidence")
        return cls(
            id=data["id"],
            task_id=data["task_id"],
            number=data["number"],
            state=data["state"],
            worker=AttemptWorker(
                worker["name"],
                worker["instance_id"],
                worker["connection_id"],
                worker.get("sdk"),
                worker.get("host"),
                worker.get("pid"),
            ),
            leased_at=_time(data["leased_at"]),
            attempt_deadline_at=_time(data["attempt_deadline_at"]),
            evidence_count=data["evidence_count"],
            lease_expires_at=_maybe(data.get("lease_expires_at")),
            started_at=_maybe(data.get("started_at")),
            last_heartbeat_at=_maybe(data.get("last_heartbeat_at")),
            ended_at=_maybe(data.get("ended_at")),
            duration_ms=data.get("duration_ms"),
            end_reason=data.get("end_reason"),
            error=None
            if error is None
            else AttemptError(error["code"], error["message"], error.get("retryable")),
            task_outcome=None
            if outcome is None
            else AttemptOutcome(outcome["state"], int(outcome["revision"])),
            evidence=None if evidence is None else [Evidence.from_json(e) for e in evidence],
        )


@dataclass(frozen=True, slots=True)
class ListAttemptsRequest:
    task_id: str
    limit: int | None = None
    cursor: str | None = None

    def to_params(self) -> dict[str, str]:
        return page_params(self.limit, self.cursor)


@dataclass(frozen=True, slots=True)
class AttemptPage:
    items: list[Attempt]
    next_cursor: str | None


def list_attempts(request: ListAttemptsRequest) -> Call[AttemptPage]:
    return Call("GET", _task_path(request.task_id) + "/attempts", _page, params=request.to_params())


def get_attempt(task_id: str, attempt_id: str) -> Call[Attempt]:
    path = f"{_task_path(task_id)}/attempts/{checked_id(attempt_id, 'attempt_id')}"
    return Call("GET", path, lambda data, _: Attempt.from_json(data))


def _task_path(task_id: str) -> str:
    return f"/v1/tasks/{checked_id(task_id, 'task_id')}"


def _page(data: Any, request_id: str) -> AttemptPage:
    return AttemptPage([Attempt.from_json(item) for item in data["items"]], data.get("next_cursor"))


def _time(value: str) -> datetime:
    return parse_time(value, "response")


def _maybe(value: str | None) -> datetime | None:
    return None if value is None else _time(value)

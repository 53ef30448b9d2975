"""Values the kernel hands to the connection layer: who is connected (Peer), what a lease
grant carries (Grant), and the answer to one worker message (Ack)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache

from agentcall.orbit.domain.jsonvalue import JsonValue, RawJson
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.times import format_time
from agentcall.orbit.domain.worker_errors import ProtocolError
from agentcall.orbit.protocol.messages import WorkerIdentity
from agentcall.orbit.telemetry import spans


@dataclass(frozen=True, slots=True)
class Peer:
    connection_id: str
    token_id: str
    namespace_id: str
    queues: frozenset[str]
    worker: WorkerIdentity


@dataclass(frozen=True, slots=True)
class Grant:
    task: Task
    attempt_id: str
    number: int
    lease_token: str
    leased_at: datetime
    lease_expires_at: datetime
    attempt_deadline_at: datetime

    def message(self) -> dict[str, JsonValue]:
        task = self.task
        body: dict[str, JsonValue] = {
            "id": task.id,
            "queue_id": task.queue_id,
            "revision": str(task.revision),
            "handler": task.handler,
            "handler_version": task.handler_version,
            "payload_version": task.payload_version,
            "payload": RawJson(task.payload_text),
            "recovery_safety": task.recovery_safety.value,
            "attempt_count": task.attempt_count,
            "max_attempts": task.retry.max_attempts,
            "deadline_at": time_text(task.deadline_at),
        }
        if task.business_key is not None:
            body["business_key"] = task.business_key
        if task.start_deadline_at is not None:
            body["start_deadline_at"] = time_text(task.start_deadline_at)
        attempt: dict[str, JsonValue] = {
            "id": self.attempt_id,
            "number": self.number,
            "lease_token": self.lease_token,
            "leased_at": time_text(self.leased_at),
            "lease_expires_at": time_text(self.lease_expires_at),
            "attempt_deadline_at": time_text(self.attempt_deadline_at),
        }
        if task.trace_parent is not None:  # stored only while tracing is on
            self._trace(attempt)
        return {"type": "lease", "attempt": attempt, "task": body}

    def _trace(self, attempt: dict[str, JsonValue]) -> None:
        assert self.task.trace_parent is not None
        sent = spans.leased(self.task.trace_parent, self.task.id, self.attempt_id, self.number)
        if sent is not None:
            attempt["traceparent"] = sent


@lru_cache(maxsize=1024)
def time_text(value: datetime) -> str:
    """`format_time`, remembered: the leases and acks of one batch share most of their times
    (its clock, the lease expiry, the deadlines of tasks submitted together)."""
    return format_time(value)


@dataclass(frozen=True, slots=True)
class Ack:
    """`ok` with extra fields, or an error code. `ended` names an attempt this connection no
    longer holds (capacity freed); `wake` a queue that has new WAITING work."""

    ok: bool
    fields: dict[str, JsonValue] = field(default_factory=dict)
    code: str | None = None
    message: str | None = None
    ended: str | None = None
    wake: str | None = None

    @classmethod
    def refused(cls, error: ProtocolError, attempt_id: str | None = None) -> Ack:
        ended = attempt_id if error.code in _ENDS_ATTEMPT else None
        return cls(False, code=error.code, message=error.message, ended=ended)

    def body(self, msg_id: str) -> dict[str, JsonValue]:
        if self.ok:
            return {"type": "ack", "msg_id": msg_id, "ok": True, **self.fields}
        error: dict[str, JsonValue] = {"code": self.code, "message": self.message}
        return {"type": "ack", "msg_id": msg_id, "ok": False, "error": error}


_ENDS_ATTEMPT = frozenset(
    {"LEASE_LOST", "START_DEADLINE_EXCEEDED", "DEADLINE_EXCEEDED", "RESULT_CONFLICT"}
)

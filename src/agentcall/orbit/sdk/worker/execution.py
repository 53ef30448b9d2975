"""One leased attempt inside the worker: its facts, phase, cancellation token and the call of
its handler (async in the event loop, sync in the thread pool)."""

from __future__ import annotations

import asyncio
import enum
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.sdk.worker.context import (
    AttemptInfo,
    CancellationToken,
    Context,
    EvidenceSink,
    TaskInfo,
)
from agentcall.orbit.sdk.worker.outcomes import from_exception, succeeded
from agentcall.orbit.sdk.worker.registry import Registration
from agentcall.orbit.telemetry.handler import handler_span, record_outcome


class Phase(enum.StrEnum):
    LEASED = "LEASED"
    RUNNING = "RUNNING"
    FINISHING = "FINISHING"


@dataclass(slots=True)
class AttemptRun:
    task: TaskInfo
    attempt: AttemptInfo
    payload: Any
    token: CancellationToken = field(default_factory=CancellationToken)
    phase: Phase = Phase.LEASED
    lost: bool = False  # the server ended the attempt: send nothing more for it
    abandoned: bool = False  # handed back on shutdown: a late result is dropped
    evidence_queue: list[dict[str, Any]] = field(default_factory=list)  # appended by handlers
    evidence_sent: list[asyncio.Future[Any]] = field(default_factory=list)
    runner: asyncio.Task[None] | None = None

    @property
    def ref(self) -> dict[str, JsonValue]:
        return {"attempt_id": self.attempt.attempt_id, "lease_token": self.attempt.lease_token}

    def take_evidence(self) -> list[JsonValue]:
        """Items recorded since the last call (list.pop is atomic: safe against threads)."""
        items: list[JsonValue] = []
        while self.evidence_queue:
            items.append(self.evidence_queue.pop(0))
        return items

    @property
    def silent(self) -> bool:
        return self.lost or self.abandoned


def run_from_lease(message: dict[str, Any]) -> AttemptRun:
    """Build the run from a decoded `lease` message (numbers already exact: int, Decimal);
    raises KeyError/TypeError/ValueError when it is malformed."""
    task, attempt = message["task"], message["attempt"]
    return AttemptRun(
        task=TaskInfo(
            task_id=task["id"],
            queue_id=task["queue_id"],
            handler=task["handler"],
            handler_version=task["handler_version"],
            payload_version=task["payload_version"],
            recovery_safety=task["recovery_safety"],
            attempt_count=int(task["attempt_count"]),
            max_attempts=int(task["max_attempts"]),
            deadline_at=task["deadline_at"],
            start_deadline_at=task.get("start_deadline_at"),
            business_key=task.get("business_key"),
        ),
        attempt=AttemptInfo(
            attempt_id=attempt["id"],
            number=int(attempt["number"]),
            lease_token=attempt["lease_token"],
            attempt_deadline_at=attempt["attempt_deadline_at"],
            traceparent=attempt.get("traceparent"),
        ),
        payload=task["payload"],
    )


async def invoke(
    run: AttemptRun, registration: Registration, sink: EvidenceSink, pool: Executor
) -> dict[str, JsonValue] | None:
    """Call the handler; return the result body, or None to hand the attempt back."""
    attempt = run.attempt
    if attempt.traceparent is None:  # the server does not trace this task
        return await _call(run, registration, sink, pool)
    with handler_span(
        attempt.traceparent, run.task.handler, run.task.task_id, attempt.number
    ) as span:
        body = await _call(run, registration, sink, pool)
        record_outcome(span, body)
    return body


async def _call(
    run: AttemptRun, registration: Registration, sink: EvidenceSink, pool: Executor
) -> dict[str, JsonValue] | None:
    context = Context(run.task, run.attempt, run.token, sink)
    try:
        if registration.is_async:
            value = await registration.function(context, run.payload)
        else:
            loop = asyncio.get_running_loop()
            value = await loop.run_in_executor(pool, registration.function, context, run.payload)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # the handler's failure is data: it becomes the result
        return from_exception(exc, run.task.recovery_safety)
    return succeeded(value)

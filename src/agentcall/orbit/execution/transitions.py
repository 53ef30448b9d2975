"""Writes of one transition: the attempt row, the task row (revision + 1) and one task event,
all in the caller's transaction. The outcome itself comes from `orbit.domain.attempts`."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.attempts import AttemptState, Outcome, TaskErrorCode
from agentcall.orbit.domain.evidence import WorkerError
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.jsonvalue import JsonValue, dumps
from agentcall.orbit.domain.states import TaskState, check_transition
from agentcall.orbit.domain.worker_errors import LeaseLost
from agentcall.orbit.store.execution import (
    LiveAttempt,
    event_row,
    insert_events,
    update_attempt,
    update_task,
)
from agentcall.orbit.store.sql import ConcurrentChange

ERROR_MESSAGES = {
    TaskErrorCode.HANDLER_FAILED: "the handler reported a failure that is not retryable",
    TaskErrorCode.REVIEW_REQUESTED: "the handler could not tell the outcome; review the evidence",
    TaskErrorCode.ATTEMPTS_EXHAUSTED: "every attempt of retry.max_attempts was used",
    TaskErrorCode.DEADLINE_EXCEEDED: "the task deadline passed before it could finish",
    TaskErrorCode.START_DEADLINE_EXCEEDED: "start_deadline_at passed before an attempt started",
    TaskErrorCode.ATTEMPT_LOST: (
        "the worker was lost while running a RECONCILE_ONLY task; the outcome is unknown: "
        "reconcile with the attempt's evidence"
    ),
    TaskErrorCode.ATTEMPT_TIMED_OUT: (
        "the attempt reached its deadline while running a RECONCILE_ONLY task; the outcome is "
        "unknown: reconcile with the attempt's evidence"
    ),
    TaskErrorCode.CANCEL_UNCONFIRMED: (
        "a cancel was requested but the worker never confirmed it for a RECONCILE_ONLY task; "
        "the outcome is unknown: reconcile with the attempt's evidence"
    ),
}
_EVENT_KIND = {
    TaskState.SUCCEEDED: "SUCCEEDED",
    TaskState.FAILED: "FAILED",
    TaskState.NEEDS_REVIEW: "NEEDS_REVIEW",
    TaskState.WAITING: "REQUEUED",
    TaskState.CANCELLED: "CANCELLED",
}


@dataclass(frozen=True, slots=True)
class EndFacts:
    """What a worker result adds to an outcome."""

    error: WorkerError | None = None
    result_text: str | None = None
    end_digest: str | None = None
    attempt_values: dict[str, Any] = field(default_factory=dict)


async def write_end(
    conn: AsyncConnection, now: datetime, live: LiveAttempt, outcome: Outcome, facts: EndFacts
) -> int:
    """End the attempt and move its task; returns the task's new revision."""
    check_transition(live.task_state, outcome.task_state)
    revision = live.task_revision + 1
    attempt_values: dict[str, Any] = {
        "state": outcome.attempt_state.value,
        "ended_at": now,
        "end_reason": outcome.end_reason.value,
        "end_digest": facts.end_digest,
        "task_state_after": outcome.task_state.value,
        "task_revision_after": revision,
        **facts.attempt_values,
    }
    if facts.error is not None:
        attempt_values.update(
            error_code=facts.error.code,
            error_message=facts.error.message,
            error_retryable=facts.error.retryable,
        )
    if not await update_attempt(conn, live.id, live.state, attempt_values):
        raise LeaseLost(f"attempt {live.id} changed concurrently")
    task_values = _task_values(now, outcome, facts)
    if not await update_task(conn, live.task_id, live.task_state, live.task_revision, task_values):
        # the attempt row is already written: abort the whole transaction, never half of it
        raise ConcurrentChange(f"task {live.task_id} changed concurrently")
    detail: dict[str, JsonValue] = {"attempt_id": live.id, "reason": outcome.end_reason.value}
    if outcome.error_code is not None:
        detail["error_code"] = outcome.error_code.value
    kind = _EVENT_KIND[outcome.task_state]
    row = event_row(
        live.task_id,
        revision,
        kind,
        live.task_state,
        outcome.task_state,
        dumps(detail),
        now,
        new_id(),
    )
    await insert_events(conn, [row])
    return revision


def _task_values(now: datetime, outcome: Outcome, facts: EndFacts) -> dict[str, Any]:
    values: dict[str, Any] = {
        "state": outcome.task_state.value,
        "updated_at": now,
        "current_attempt_id": None,
    }
    if outcome.task_state is TaskState.WAITING:
        values["available_at"] = outcome.available_at
    if outcome.task_state.terminal:
        values["completed_at"] = now
    if outcome.task_state is TaskState.SUCCEEDED:
        values["result"] = facts.result_text
    if outcome.error_code is not None:
        values["error_code"] = outcome.error_code.value
        values["error_message"] = _message(outcome.error_code, facts.error)
        if facts.error is not None:
            values["attempt_error"] = dumps(error_json(facts.error))
    return values


def _message(code: TaskErrorCode, error: WorkerError | None) -> str:
    if code in (TaskErrorCode.HANDLER_FAILED, TaskErrorCode.REVIEW_REQUESTED) and error:
        return error.message
    return ERROR_MESSAGES[code]


def error_json(error: WorkerError) -> dict[str, JsonValue]:
    body: dict[str, JsonValue] = {"code": error.code, "message": error.message}
    if error.retryable is not None:
        body["retryable"] = error.retryable
    return body


def started_values(now: datetime, lease_expires_at: datetime) -> dict[str, Any]:
    return {
        "state": AttemptState.RUNNING.value,
        "started_at": now,
        "lease_expires_at": lease_expires_at,
        "last_heartbeat_at": now,
    }

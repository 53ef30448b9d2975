"""The engine's transitions as values, and the pure row builders the store writes them with.

A transition item (`LeaseWrite`, `StartWrite`, `EndWrite`) says what moves: which attempt and
task, from the state they were read in, to what (immutable named tuples: one is built per
message on the hot path, at a tuple's cost). The builders below turn one item into the
column values of its rows (attempt, task, event); the store's one batched writer per
transition kind (`agentcall.orbit.store.transactions`) applies them for a whole batch at once, and
the in-memory twin applies the same values to its records. Nothing here reads a clock: `now` is
the database time of the caller's transaction."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from agentcall.orbit.domain.attempts import (
    AttemptState,
    EndReason,
    Outcome,
    TaskErrorCode,
    TaskFacts,
)
from agentcall.orbit.domain.evidence import WorkerError
from agentcall.orbit.domain.flow_settings import DEFAULT_PRIORITY, MAX_PRIORITY
from agentcall.orbit.domain.jsonvalue import JsonValue, dumps
from agentcall.orbit.domain.lease_order import lease_order, rank_order
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.task import Task

Row = dict[str, Any]

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
END_EVENT_KIND = {
    TaskState.SUCCEEDED: "SUCCEEDED",
    TaskState.FAILED: "FAILED",
    TaskState.NEEDS_REVIEW: "NEEDS_REVIEW",
    TaskState.WAITING: "REQUEUED",
    TaskState.CANCELLED: "CANCELLED",
}


@dataclass(frozen=True, slots=True)
class LiveAttempt:
    """An attempt with the task facts its transitions need, as read in the caller's
    transaction (locked on MySQL/MariaDB: FOR UPDATE)."""

    id: str
    task_id: str
    namespace_id: str
    queue_id: str
    number: int
    state: AttemptState
    token_sha256: str
    connection_id: str
    lease_expires_at: datetime
    attempt_deadline_at: datetime
    started_at: datetime | None
    end_reason: str | None
    end_digest: str | None
    evidence_count: int
    task_state: TaskState
    task_revision: int
    task_cancel_requested: bool
    facts: TaskFacts
    lease_rank: int = MAX_PRIORITY - DEFAULT_PRIORITY  # the task's (its lease order on retry)


@dataclass(frozen=True, slots=True)
class EndFacts:
    """What a worker message adds to an outcome: its error, its result, and the digest that
    recognises a resend of the same message."""

    error: WorkerError | None = None
    result_text: str | None = None
    end_digest: str | None = None


class Holder(NamedTuple):
    """The connection a lease goes to and the worker behind it (kept on the attempt)."""

    connection_id: str
    token_id: str
    worker_name: str
    worker_instance_id: str
    worker_sdk: str | None
    worker_host: str | None
    worker_pid: int | None


class LeaseWrite(NamedTuple):
    """WAITING → LEASED of `task` (its revision as read): a new attempt `attempt_id` number
    `number` held by `holder`, whose lease token has the digest `token_sha256`."""

    task: Task
    attempt_id: str
    number: int
    token_sha256: str
    holder: Holder
    lease_expires_at: datetime
    attempt_deadline_at: datetime


class StartWrite(NamedTuple):
    """LEASED → RUNNING of `live` (attempt and task), its lease renewed to `lease_expires_at`;
    the task's attempt count grows by one."""

    live: LiveAttempt
    lease_expires_at: datetime


class EndWrite(NamedTuple):
    """The end of attempt `live` (LEASED or RUNNING) as `outcome` decided it, with what the
    worker's message adds (`facts`): the attempt ends, the task moves to `outcome.task_state`
    (revision + 1) and one event records it."""

    live: LiveAttempt
    outcome: Outcome
    facts: EndFacts = EndFacts()


# ---------------------------------------------------------------------- row builders
def event_row(
    task_id: str,
    revision: int,
    kind: str,
    from_state: TaskState,
    to_state: TaskState,
    detail: str,
    now: datetime,
    event_id: str,
) -> Row:
    """One task event: the move of `task_id` to `revision`."""
    return {
        "id": event_id,
        "task_id": task_id,
        "revision": revision,
        "kind": kind,
        "from_state": from_state.value,
        "to_state": to_state.value,
        "detail": detail,
        "created_at": now,
    }


def lease_attempt_row(lease: LeaseWrite, now: datetime) -> Row:
    """The new LEASED attempt of a lease, with the identity of the connection it went to."""
    task, holder = lease.task, lease.holder
    return {
        "id": lease.attempt_id,
        "task_id": task.id,
        "namespace_id": task.namespace_id,
        "queue_id": task.queue_id,
        "number": lease.number,
        "state": AttemptState.LEASED.value,
        "lease_token_sha256": lease.token_sha256,
        "token_id": holder.token_id,
        "connection_id": holder.connection_id,
        "worker_name": holder.worker_name,
        "worker_instance_id": holder.worker_instance_id,
        "worker_sdk": holder.worker_sdk,
        "worker_host": holder.worker_host,
        "worker_pid": holder.worker_pid,
        "leased_at": now,
        "lease_expires_at": lease.lease_expires_at,
        "attempt_deadline_at": lease.attempt_deadline_at,
        "evidence_count": 0,
    }


def lease_event_row(task: Task, attempt_id: str, now: datetime, event_id: str) -> Row:
    """The WAITING → LEASED event of a lease (revision + 1)."""
    return {
        "id": event_id,
        "task_id": task.id,
        "revision": task.revision + 1,
        "kind": "LEASED",
        "from_state": TaskState.WAITING.value,
        "to_state": TaskState.LEASED.value,
        "detail": f'{{"attempt_id":"{attempt_id}"}}',
        "created_at": now,
    }


def start_event_row(start: StartWrite, now: datetime, event_id: str) -> Row:
    """The LEASED → RUNNING event of a start (revision + 1)."""
    live = start.live
    return {
        "id": event_id,
        "task_id": live.task_id,
        "revision": live.task_revision + 1,
        "kind": "STARTED",
        "from_state": TaskState.LEASED.value,
        "to_state": TaskState.RUNNING.value,
        "detail": f'{{"attempt_id":"{live.id}"}}',
        "created_at": now,
    }


def end_attempt_row(end: EndWrite) -> Row:
    """The ended attempt's values (its `ended_at` is the batch's `now`)."""
    live, outcome, facts = end.live, end.outcome, end.facts
    row: Row = {
        "id": live.id,
        "state": outcome.attempt_state.value,
        "end_reason": outcome.end_reason.value,
        "end_digest": facts.end_digest,
        "task_state_after": outcome.task_state.value,
        "task_revision_after": live.task_revision + 1,
    }
    if facts.error is not None:
        row.update(
            error_code=facts.error.code,
            error_message=facts.error.message,
            error_retryable=facts.error.retryable,
        )
    return row


def end_task_row(end: EndWrite, now: datetime) -> Row:
    """The task's values after the end (revision, update time and current attempt are the
    writer's, the same for every row)."""
    live, outcome, facts = end.live, end.outcome, end.facts
    row: Row = {"id": live.task_id, "state": outcome.task_state.value}
    if outcome.task_state is TaskState.WAITING:
        assert outcome.available_at is not None
        row["available_at"] = outcome.available_at
        row["lease_order"] = rank_order(outcome.available_at, live.lease_rank)
    if outcome.task_state.terminal:
        row["completed_at"] = now
    if outcome.task_state is TaskState.SUCCEEDED:
        row["result"] = facts.result_text
    if outcome.error_code is not None:
        row["error_code"] = outcome.error_code.value
        row["error_message"] = error_message(outcome.error_code, facts.error)
        if facts.error is not None:
            row["attempt_error"] = dumps(error_json(facts.error))
    return row


def end_event_row(end: EndWrite, now: datetime, event_id: str) -> Row:
    live, outcome = end.live, end.outcome
    detail: dict[str, JsonValue] = {"attempt_id": live.id, "reason": outcome.end_reason.value}
    if outcome.error_code is not None:
        detail["error_code"] = outcome.error_code.value
    kind = END_EVENT_KIND[outcome.task_state]
    return {
        "id": event_id,
        "task_id": live.task_id,
        "revision": live.task_revision + 1,
        "kind": kind,
        "from_state": live.task_state.value,
        "to_state": outcome.task_state.value,
        "detail": dumps(detail),
        "created_at": now,
    }


def error_message(code: TaskErrorCode, error: WorkerError | None) -> str:
    """The task's error message: the worker's own for a failure it reported, else the
    server's text for the code."""
    if code in (TaskErrorCode.HANDLER_FAILED, TaskErrorCode.REVIEW_REQUESTED) and error:
        if error.message:
            return error.message
    return ERROR_MESSAGES[code]


def error_json(error: WorkerError) -> dict[str, JsonValue]:
    body: dict[str, JsonValue] = {"code": error.code, "message": error.message}
    if error.retryable is not None:
        body["retryable"] = error.retryable
    return body


# ---------------------------------------------------------------------- operator writes
class OperatorMove(enum.Enum):
    """What an operator's write on one task does (each one conditional on the task's state
    and revision as read, revision + 1), and the kind of its event."""

    CANCEL_WAITING = "cancel_waiting"  # WAITING → CANCELLED at once
    CANCEL_LEASE = "cancel_lease"  # LEASED → CANCELLED, its unstarted attempt with it
    REQUEST_CANCEL = "request_cancel"  # RUNNING: cancel_requested_at, the worker is told
    RETRY = "retry"  # FAILED or NEEDS_REVIEW → WAITING
    RESOLVE = "resolve"  # NEEDS_REVIEW → SUCCEEDED or FAILED

    @property
    def event_kind(self) -> str:
        return _OPERATOR_EVENT_KIND[self]


_OPERATOR_EVENT_KIND = {
    OperatorMove.CANCEL_WAITING: "CANCELLED",
    OperatorMove.CANCEL_LEASE: "CANCELLED",
    OperatorMove.REQUEST_CANCEL: "CANCEL_REQUESTED",
    OperatorMove.RETRY: "RETRIED",
    OperatorMove.RESOLVE: "RESOLVED",
}


def operator_task_row(move: OperatorMove, done: Task, now: datetime) -> Row:
    """The task's values after an operator's `move` to `done`, besides its revision (the
    decisions of `agentcall.orbit.domain.cancel` and `agentcall.orbit.domain.review` checked the
    move)."""
    if move is OperatorMove.RETRY:
        return {
            "state": done.state.value,
            "available_at": now,
            "lease_order": lease_order(now, done.flow.priority),
            "retry_max_attempts": done.retry.max_attempts,
            "result": None,
            "error_code": None,
            "error_message": None,
            "attempt_error": None,
            "cancel_requested_at": None,
            "completed_at": None,
            "current_attempt_id": None,
            "updated_at": now,
        }
    if move is OperatorMove.RESOLVE:
        return {
            "state": done.state.value,
            "result": done.result_text,
            "error_code": done.error_code,
            "error_message": done.error_message,
            "attempt_error": None,
            "completed_at": now,
            "current_attempt_id": None,
            "updated_at": now,
        }
    row: Row = {"cancel_requested_at": now, "updated_at": now}
    if move is not OperatorMove.REQUEST_CANCEL:
        row.update(state=done.state.value, completed_at=now, current_attempt_id=None)
    return row


def cancelled_attempt_row(done: Task, now: datetime) -> Row:
    """A leased, not yet started attempt cancelled with its task (`OperatorMove.CANCEL_LEASE`):
    the attempt's values."""
    return {
        "state": AttemptState.CANCELLED.value,
        "ended_at": now,
        "end_reason": EndReason.CANCELLED.value,
        "end_digest": EndReason.CANCELLED.value,
        "task_state_after": done.state.value,
        "task_revision_after": done.revision,
    }

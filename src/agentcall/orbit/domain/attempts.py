"""Attempts and what their end does to the task (docs/orbit/worker-protocol.md §4).

`decide_end(task, end, now)` is the one outcome table: a result, a lost lease, an attempt
timeout or a hand-back, for an attempt that started or not, under the task's recovery safety,
attempt budget and deadlines (O-STATE-1). It never reads a clock: `now` is the database time.
The policy-retry delay comes in through `backoff` (the default retries at once).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from agentcall.orbit.domain.errors import IllegalTransition
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.submit import RecoverySafety, RetryPolicy
from agentcall.orbit.domain.times import milliseconds


class AttemptState(enum.StrEnum):
    LEASED = "LEASED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    NEEDS_REVIEW = "NEEDS_REVIEW"
    LOST = "LOST"
    TIMED_OUT = "TIMED_OUT"
    EXPIRED = "EXPIRED"
    RELEASED = "RELEASED"
    CANCELLED = "CANCELLED"

    @property
    def live(self) -> bool:
        return self in (AttemptState.LEASED, AttemptState.RUNNING)


_A = AttemptState
_ENDED_FROM_LEASED = frozenset(
    {_A.RUNNING, _A.LOST, _A.TIMED_OUT, _A.EXPIRED, _A.RELEASED, _A.CANCELLED}
)
ATTEMPT_TRANSITIONS: dict[AttemptState, frozenset[AttemptState]] = {
    _A.LEASED: _ENDED_FROM_LEASED,
    _A.RUNNING: frozenset(
        {_A.SUCCEEDED, _A.FAILED, _A.NEEDS_REVIEW, _A.LOST, _A.TIMED_OUT, _A.RELEASED, _A.CANCELLED}
    ),
    **{state: frozenset() for state in AttemptState if not state.live},
}


def check_attempt_transition(source: AttemptState, target: AttemptState) -> None:
    if target not in ATTEMPT_TRANSITIONS[source]:
        raise IllegalTransition(f"an attempt cannot move from {source} to {target}")


class EndCause(enum.StrEnum):
    """Why an attempt ends. The first three are worker results."""

    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    NEEDS_REVIEW = "NEEDS_REVIEW"
    LEASE_EXPIRED = "LEASE_EXPIRED"
    ATTEMPT_TIMEOUT = "ATTEMPT_TIMEOUT"
    RELEASED_SHUTDOWN = "RELEASED_SHUTDOWN"
    RELEASED_UNSUPPORTED = "RELEASED_UNSUPPORTED"
    # the worker confirms its cooperative stop (docs/orbit/task-control.md §3)
    CANCELLED = "CANCELLED"

    @property
    def is_result(self) -> bool:
        return self in (
            EndCause.SUCCEEDED,
            EndCause.FAILED,
            EndCause.NEEDS_REVIEW,
            EndCause.CANCELLED,
        )


class EndReason(enum.StrEnum):
    """`end_reason` of an attempt in the history API."""

    RESULT = "RESULT"
    LEASE_EXPIRED = "LEASE_EXPIRED"
    ATTEMPT_TIMEOUT = "ATTEMPT_TIMEOUT"
    START_DEADLINE_EXCEEDED = "START_DEADLINE_EXCEEDED"
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
    RELEASED_SHUTDOWN = "RELEASED_SHUTDOWN"
    RELEASED_UNSUPPORTED = "RELEASED_UNSUPPORTED"
    CANCELLED = "CANCELLED"  # cancelled through the API before it started


class TaskErrorCode(enum.StrEnum):
    """`error.code` of a FAILED or NEEDS_REVIEW task."""

    HANDLER_FAILED = "HANDLER_FAILED"
    REVIEW_REQUESTED = "REVIEW_REQUESTED"
    ATTEMPTS_EXHAUSTED = "ATTEMPTS_EXHAUSTED"
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
    START_DEADLINE_EXCEEDED = "START_DEADLINE_EXCEEDED"
    ATTEMPT_LOST = "ATTEMPT_LOST"
    ATTEMPT_TIMED_OUT = "ATTEMPT_TIMED_OUT"
    CANCEL_UNCONFIRMED = "CANCEL_UNCONFIRMED"


@dataclass(frozen=True, slots=True)
class TaskFacts:
    """What the decision needs of the task. `attempt_count` counts started attempts,
    including the one that ends when it started."""

    recovery_safety: RecoverySafety
    retry: RetryPolicy
    attempt_count: int
    deadline_at: datetime
    start_deadline_at: datetime | None
    cancel_requested: bool = False


@dataclass(frozen=True, slots=True)
class AttemptEnd:
    cause: EndCause
    started: bool
    retryable: bool = False


@dataclass(frozen=True, slots=True)
class Outcome:
    """The task's next state, the attempt's final state and why."""

    task_state: TaskState
    attempt_state: AttemptState
    end_reason: EndReason
    error_code: TaskErrorCode | None = None
    available_at: datetime | None = None


Backoff = Callable[[RetryPolicy, int], int]
"""Delay in ms before attempt `n + 1` after `n` started attempts (the server passes its own)."""


def no_backoff(policy: RetryPolicy, attempts: int) -> int:
    return 0


_LOST_STATE = {
    EndCause.LEASE_EXPIRED: AttemptState.LOST,
    EndCause.ATTEMPT_TIMEOUT: AttemptState.TIMED_OUT,
    EndCause.RELEASED_SHUTDOWN: AttemptState.RELEASED,
    EndCause.RELEASED_UNSUPPORTED: AttemptState.RELEASED,
}
_LOST_REASON = {
    EndCause.LEASE_EXPIRED: EndReason.LEASE_EXPIRED,
    EndCause.ATTEMPT_TIMEOUT: EndReason.ATTEMPT_TIMEOUT,
    EndCause.RELEASED_SHUTDOWN: EndReason.RELEASED_SHUTDOWN,
    EndCause.RELEASED_UNSUPPORTED: EndReason.RELEASED_UNSUPPORTED,
}


def decide_end(
    task: TaskFacts, end: AttemptEnd, now: datetime, backoff: Backoff = no_backoff
) -> Outcome:
    """The outcome table of worker-protocol.md §4."""
    if end.cause.is_result and not end.started:
        raise IllegalTransition("a result is only accepted for a RUNNING attempt")
    if task.cancel_requested:
        return _after_cancel_request(task, end, now, backoff)
    if end.cause is EndCause.CANCELLED:
        raise IllegalTransition("`cancelled` is only accepted after a cancel request")
    if not end.started:
        return _never_started(task, end.cause, now)
    if end.cause.is_result:
        return _result(task, end, now, backoff)
    return _lost(task, end.cause, now, backoff)


def _after_cancel_request(
    task: TaskFacts, end: AttemptEnd, now: datetime, backoff: Backoff
) -> Outcome:
    """The end of an attempt whose task has a cancel request (docs/orbit/task-control.md §3): the
    worker's confirmation cancels; any other result wins as usual, except that nothing is
    retried; a stop nobody confirmed cancels only what is safe to cancel blindly."""
    if end.cause is EndCause.CANCELLED:
        return Outcome(TaskState.CANCELLED, AttemptState.CANCELLED, EndReason.RESULT)
    if end.cause is EndCause.FAILED and end.retryable:
        return Outcome(TaskState.CANCELLED, AttemptState.FAILED, EndReason.RESULT)
    if end.cause.is_result:
        return _result(task, end, now, backoff)
    state, reason = _LOST_STATE[end.cause], _LOST_REASON[end.cause]
    if end.started and task.recovery_safety is RecoverySafety.RECONCILE_ONLY:
        return Outcome(TaskState.NEEDS_REVIEW, state, reason, TaskErrorCode.CANCEL_UNCONFIRMED)
    return Outcome(TaskState.CANCELLED, state, reason)


def refused_start(code: TaskErrorCode) -> Outcome:
    """`started` past a deadline: the task fails without running (the start fence)."""
    return Outcome(TaskState.FAILED, AttemptState.EXPIRED, EndReason(code.value), code)


def _never_started(task: TaskFacts, cause: EndCause, now: datetime) -> Outcome:
    """The handler provably never ran (start fence): hand the task on unless too late."""
    late = deadline_error(task, now)
    if late is not None:
        return refused_start(late)
    return Outcome(TaskState.WAITING, _LOST_STATE[cause], _LOST_REASON[cause], available_at=now)


def _result(task: TaskFacts, end: AttemptEnd, now: datetime, backoff: Backoff) -> Outcome:
    if end.cause is EndCause.SUCCEEDED:
        return Outcome(TaskState.SUCCEEDED, AttemptState.SUCCEEDED, EndReason.RESULT)
    if end.cause is EndCause.NEEDS_REVIEW:
        return Outcome(
            TaskState.NEEDS_REVIEW,
            AttemptState.NEEDS_REVIEW,
            EndReason.RESULT,
            TaskErrorCode.REVIEW_REQUESTED,
        )
    if not end.retryable:
        return Outcome(
            TaskState.FAILED, AttemptState.FAILED, EndReason.RESULT, TaskErrorCode.HANDLER_FAILED
        )
    return _retry_or_fail(task, AttemptState.FAILED, EndReason.RESULT, now, backoff)


def _lost(task: TaskFacts, cause: EndCause, now: datetime, backoff: Backoff) -> Outcome:
    state, reason = _LOST_STATE[cause], _LOST_REASON[cause]
    if task.recovery_safety is RecoverySafety.RECONCILE_ONLY:
        code = (
            TaskErrorCode.ATTEMPT_TIMED_OUT
            if cause is EndCause.ATTEMPT_TIMEOUT
            else TaskErrorCode.ATTEMPT_LOST
        )
        return Outcome(TaskState.NEEDS_REVIEW, state, reason, code)
    return _retry_or_fail(task, state, reason, now, backoff)


def _retry_or_fail(
    task: TaskFacts, state: AttemptState, reason: EndReason, now: datetime, backoff: Backoff
) -> Outcome:
    if task.attempt_count >= task.retry.max_attempts:
        return Outcome(TaskState.FAILED, state, reason, TaskErrorCode.ATTEMPTS_EXHAUSTED)
    available = now + milliseconds(backoff(task.retry, task.attempt_count))
    late = deadline_error(task, available)
    if late is not None:
        return Outcome(TaskState.FAILED, state, reason, late)
    return Outcome(TaskState.WAITING, state, reason, available_at=available)


def deadline_error(task: TaskFacts, at: datetime) -> TaskErrorCode | None:
    """Which deadline forbids starting an attempt at `at`, if any (the task deadline wins)."""
    if at >= task.deadline_at:
        return TaskErrorCode.DEADLINE_EXCEEDED
    if task.start_deadline_at is not None and at >= task.start_deadline_at:
        return TaskErrorCode.START_DEADLINE_EXCEEDED
    return None

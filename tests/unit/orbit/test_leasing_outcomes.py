"""O-STATE-1: the outcome table of an attempt's end (worker-protocol.md §4), row by row."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentcall.orbit.domain.attempts import (
    ATTEMPT_TRANSITIONS,
    AttemptEnd,
    AttemptState,
    EndCause,
    EndReason,
    Outcome,
    TaskErrorCode,
    TaskFacts,
    check_attempt_transition,
    deadline_error,
    decide_end,
)
from agentcall.orbit.domain.errors import IllegalTransition
from agentcall.orbit.domain.states import TRANSITIONS, TaskState
from agentcall.orbit.domain.submit import RecoverySafety, RetryPolicy

pytestmark = pytest.mark.unit

NOW = datetime(2026, 9, 17, 12, 0, 0, tzinfo=UTC)
S = timedelta(seconds=1)
IDEM = RecoverySafety.IDEMPOTENT
RECON = RecoverySafety.RECONCILE_ONLY
T, A, R, E, C = TaskState, AttemptState, EndReason, TaskErrorCode, EndCause
AE = AttemptEnd


def facts(
    safety: RecoverySafety = IDEM,
    used: int = 1,
    max_attempts: int = 3,
    deadline: timedelta = 60 * S,
    start_deadline: timedelta | None = None,
) -> TaskFacts:
    return TaskFacts(
        recovery_safety=safety,
        retry=RetryPolicy(max_attempts, 1000, 30000, 30000),
        attempt_count=used,
        deadline_at=NOW + deadline,
        start_deadline_at=None if start_deadline is None else NOW + start_deadline,
    )


def out(
    task: TaskState,
    attempt: AttemptState,
    reason: EndReason,
    code: TaskErrorCode | None = None,
    available: datetime | None = None,
) -> Outcome:
    return Outcome(task, attempt, reason, code, available)


ROWS = [
    # --- results of a started attempt ------------------------------------------------------
    ("succeeded", facts(), AE(C.SUCCEEDED, True), out(T.SUCCEEDED, A.SUCCEEDED, R.RESULT)),
    (
        "succeeded on the last attempt",
        facts(used=3),
        AE(C.SUCCEEDED, True),
        out(T.SUCCEEDED, A.SUCCEEDED, R.RESULT),
    ),
    (
        "needs_review",
        facts(),
        AE(C.NEEDS_REVIEW, True),
        out(T.NEEDS_REVIEW, A.NEEDS_REVIEW, R.RESULT, E.REVIEW_REQUESTED),
    ),
    (
        "failed, not retryable",
        facts(),
        AE(C.FAILED, True, retryable=False),
        out(T.FAILED, A.FAILED, R.RESULT, E.HANDLER_FAILED),
    ),
    (
        "failed retryable, budget left",
        facts(),
        AE(C.FAILED, True, retryable=True),
        out(T.WAITING, A.FAILED, R.RESULT, available=NOW),
    ),
    (
        "failed retryable, RECONCILE_ONLY still retried (handler declared it safe)",
        facts(RECON),
        AE(C.FAILED, True, retryable=True),
        out(T.WAITING, A.FAILED, R.RESULT, available=NOW),
    ),
    (
        "failed retryable, budget exhausted",
        facts(used=3),
        AE(C.FAILED, True, True),
        out(T.FAILED, A.FAILED, R.RESULT, E.ATTEMPTS_EXHAUSTED),
    ),
    (
        "failed retryable, max_attempts 1",
        facts(used=1, max_attempts=1),
        AE(C.FAILED, True, True),
        out(T.FAILED, A.FAILED, R.RESULT, E.ATTEMPTS_EXHAUSTED),
    ),
    (
        "failed retryable, start deadline passed",
        facts(start_deadline=-S),
        AE(C.FAILED, True, True),
        out(T.FAILED, A.FAILED, R.RESULT, E.START_DEADLINE_EXCEEDED),
    ),
    # --- lost / timed out / handed back after start ----------------------------------------
    (
        "RECONCILE_ONLY lease expired -> review",
        facts(RECON),
        AE(C.LEASE_EXPIRED, True),
        out(T.NEEDS_REVIEW, A.LOST, R.LEASE_EXPIRED, E.ATTEMPT_LOST),
    ),
    (
        "RECONCILE_ONLY lost with budget left is never re-run",
        facts(RECON, max_attempts=5),
        AE(C.LEASE_EXPIRED, True),
        out(T.NEEDS_REVIEW, A.LOST, R.LEASE_EXPIRED, E.ATTEMPT_LOST),
    ),
    (
        "RECONCILE_ONLY timeout -> review",
        facts(RECON),
        AE(C.ATTEMPT_TIMEOUT, True),
        out(T.NEEDS_REVIEW, A.TIMED_OUT, R.ATTEMPT_TIMEOUT, E.ATTEMPT_TIMED_OUT),
    ),
    (
        "RECONCILE_ONLY at task deadline -> review, not FAILED",
        facts(RECON, deadline=-S),
        AE(C.ATTEMPT_TIMEOUT, True),
        out(T.NEEDS_REVIEW, A.TIMED_OUT, R.ATTEMPT_TIMEOUT, E.ATTEMPT_TIMED_OUT),
    ),
    (
        "RECONCILE_ONLY released on shutdown -> review",
        facts(RECON),
        AE(C.RELEASED_SHUTDOWN, True),
        out(T.NEEDS_REVIEW, A.RELEASED, R.RELEASED_SHUTDOWN, E.ATTEMPT_LOST),
    ),
    (
        "IDEMPOTENT lost, budget left -> WAITING",
        facts(),
        AE(C.LEASE_EXPIRED, True),
        out(T.WAITING, A.LOST, R.LEASE_EXPIRED, available=NOW),
    ),
    (
        "IDEMPOTENT timeout, budget left -> WAITING",
        facts(),
        AE(C.ATTEMPT_TIMEOUT, True),
        out(T.WAITING, A.TIMED_OUT, R.ATTEMPT_TIMEOUT, available=NOW),
    ),
    (
        "IDEMPOTENT released running -> WAITING",
        facts(),
        AE(C.RELEASED_SHUTDOWN, True),
        out(T.WAITING, A.RELEASED, R.RELEASED_SHUTDOWN, available=NOW),
    ),
    (
        "IDEMPOTENT lost, budget exhausted",
        facts(used=3),
        AE(C.LEASE_EXPIRED, True),
        out(T.FAILED, A.LOST, R.LEASE_EXPIRED, E.ATTEMPTS_EXHAUSTED),
    ),
    (
        "IDEMPOTENT timeout at task deadline",
        facts(deadline=timedelta(0)),
        AE(C.ATTEMPT_TIMEOUT, True),
        out(T.FAILED, A.TIMED_OUT, R.ATTEMPT_TIMEOUT, E.DEADLINE_EXCEEDED),
    ),
    (
        "IDEMPOTENT lost after start deadline",
        facts(start_deadline=timedelta(0)),
        AE(C.LEASE_EXPIRED, True),
        out(T.FAILED, A.LOST, R.LEASE_EXPIRED, E.START_DEADLINE_EXCEEDED),
    ),
    # --- never started: provably not run, recovery safety does not matter -------------------
    (
        "RECONCILE_ONLY lease expired before start -> WAITING",
        facts(RECON, used=0),
        AE(C.LEASE_EXPIRED, False),
        out(T.WAITING, A.LOST, R.LEASE_EXPIRED, available=NOW),
    ),
    (
        "released before start -> WAITING",
        facts(RECON, used=0, max_attempts=1),
        AE(C.RELEASED_SHUTDOWN, False),
        out(T.WAITING, A.RELEASED, R.RELEASED_SHUTDOWN, available=NOW),
    ),
    (
        "unsupported before start -> WAITING",
        facts(used=0),
        AE(C.RELEASED_UNSUPPORTED, False),
        out(T.WAITING, A.RELEASED, R.RELEASED_UNSUPPORTED, available=NOW),
    ),
    (
        "not started, start deadline passed -> FAILED",
        facts(RECON, used=0, start_deadline=-S),
        AE(C.LEASE_EXPIRED, False),
        out(T.FAILED, A.EXPIRED, R.START_DEADLINE_EXCEEDED, E.START_DEADLINE_EXCEEDED),
    ),
    (
        "not started, task deadline passed -> FAILED",
        facts(used=0, deadline=-S),
        AE(C.ATTEMPT_TIMEOUT, False),
        out(T.FAILED, A.EXPIRED, R.DEADLINE_EXCEEDED, E.DEADLINE_EXCEEDED),
    ),
]


@pytest.mark.parametrize(("name", "task", "end", "expected"), ROWS, ids=[r[0] for r in ROWS])
def test_outcome_table_o_state_1(
    name: str, task: TaskFacts, end: AttemptEnd, expected: Outcome
) -> None:
    outcome = decide_end(task, end, NOW)
    assert outcome == expected
    # every outcome is an edge of both state machines
    source = TaskState.RUNNING if end.started else TaskState.LEASED
    assert outcome.task_state in TRANSITIONS[source]
    check_attempt_transition(
        AttemptState.RUNNING if end.started else AttemptState.LEASED, outcome.attempt_state
    )


@pytest.mark.parametrize("cause", [EndCause.SUCCEEDED, EndCause.FAILED, EndCause.NEEDS_REVIEW])
def test_result_before_start_is_illegal(cause: EndCause) -> None:
    with pytest.raises(IllegalTransition):
        decide_end(facts(used=0), AttemptEnd(cause, started=False), NOW)


@pytest.mark.parametrize(
    ("delay_ms", "deadline", "expected_state", "code"),
    [
        (500, 60 * S, T.WAITING, None),
        (60_000, 60 * S, T.FAILED, E.DEADLINE_EXCEEDED),  # retry would start at the deadline
        (59_999, 60 * S, T.WAITING, None),
    ],
)
def test_backoff_seam_never_past_deadline(
    delay_ms: int, deadline: timedelta, expected_state: TaskState, code: TaskErrorCode | None
) -> None:
    """Backoff seam: the retry's available_at = now + backoff, and never at or past the deadline."""
    outcome = decide_end(
        facts(deadline=deadline),
        AE(C.FAILED, True, retryable=True),
        NOW,
        backoff=lambda policy, attempts: delay_ms,
    )
    assert (outcome.task_state, outcome.error_code) == (expected_state, code)
    if expected_state is T.WAITING:
        assert outcome.available_at == NOW + timedelta(milliseconds=delay_ms)


@pytest.mark.parametrize(
    ("at", "start", "expected"),
    [
        (NOW, None, None),
        (NOW + 60 * S, None, E.DEADLINE_EXCEEDED),
        (NOW + 10 * S, 10 * S, E.START_DEADLINE_EXCEEDED),
        (NOW + 60 * S, 10 * S, E.DEADLINE_EXCEEDED),
        (NOW + 9 * S, 10 * S, None),
    ],
)
def test_deadline_error(
    at: datetime, start: timedelta | None, expected: TaskErrorCode | None
) -> None:
    assert deadline_error(facts(start_deadline=start), at) == expected


def test_attempt_state_machine_ended_states_are_final() -> None:
    for state, targets in ATTEMPT_TRANSITIONS.items():
        assert bool(targets) == state.live
    with pytest.raises(IllegalTransition):
        check_attempt_transition(AttemptState.SUCCEEDED, AttemptState.RUNNING)
    with pytest.raises(IllegalTransition):
        check_attempt_transition(AttemptState.LEASED, AttemptState.SUCCEEDED)

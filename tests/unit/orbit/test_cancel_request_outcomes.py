"""Cancel while LEASED/RUNNING (docs/orbit/task-control.md §3): the end of an attempt whose
task has a cancel request, the `cancelled` result message and the task a cancel leaves
(O-CAN-1, O-STATE-1)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from agentcall.orbit.domain.attempts import (
    AttemptEnd,
    AttemptState,
    EndCause,
    EndReason,
    Outcome,
    TaskErrorCode,
    TaskFacts,
    decide_end,
)
from agentcall.orbit.domain.cancel import CancelMode, CancelPlan, apply_cancel
from agentcall.orbit.domain.errors import IllegalTransition, InvalidArgument
from agentcall.orbit.domain.states import TRANSITIONS, TaskState
from agentcall.orbit.domain.submit import RecoverySafety, RetryPolicy
from agentcall.orbit.domain.task import Task
from agentcall.orbit.protocol.messages import Result, ResultOutcome, parse_message

pytestmark = pytest.mark.unit

NOW = datetime(2026, 9, 17, 12, 0, 0, tzinfo=UTC)
IDEM, RECON = RecoverySafety.IDEMPOTENT, RecoverySafety.RECONCILE_ONLY
T, A, R, C = TaskState, AttemptState, EndReason, EndCause
UNCONFIRMED = TaskErrorCode.CANCEL_UNCONFIRMED


def facts(safety: RecoverySafety, *, requested: bool = True, used: int = 1) -> TaskFacts:
    return TaskFacts(
        safety,
        RetryPolicy(3, 1000, 30000, 30000),
        used,
        NOW + timedelta(hours=1),
        None,
        cancel_requested=requested,
    )


@pytest.mark.parametrize(
    ("safety", "end", "expected"),
    [
        # the worker confirms the cooperative stop
        (IDEM, AttemptEnd(C.CANCELLED, True), Outcome(T.CANCELLED, A.CANCELLED, R.RESULT)),
        (RECON, AttemptEnd(C.CANCELLED, True), Outcome(T.CANCELLED, A.CANCELLED, R.RESULT)),
        # a result that arrives first wins
        (RECON, AttemptEnd(C.SUCCEEDED, True), Outcome(T.SUCCEEDED, A.SUCCEEDED, R.RESULT)),
        (
            IDEM,
            AttemptEnd(C.FAILED, True),
            Outcome(T.FAILED, A.FAILED, R.RESULT, TaskErrorCode.HANDLER_FAILED),
        ),
        (
            RECON,
            AttemptEnd(C.NEEDS_REVIEW, True),
            Outcome(T.NEEDS_REVIEW, A.NEEDS_REVIEW, R.RESULT, TaskErrorCode.REVIEW_REQUESTED),
        ),
        # ... but nothing is retried once a cancel was requested
        (
            IDEM,
            AttemptEnd(C.FAILED, True, retryable=True),
            Outcome(T.CANCELLED, A.FAILED, R.RESULT),
        ),
        # nobody confirmed: IDEMPOTENT is safe to cancel, RECONCILE_ONLY needs a human
        (IDEM, AttemptEnd(C.LEASE_EXPIRED, True), Outcome(T.CANCELLED, A.LOST, R.LEASE_EXPIRED)),
        (
            IDEM,
            AttemptEnd(C.ATTEMPT_TIMEOUT, True),
            Outcome(T.CANCELLED, A.TIMED_OUT, R.ATTEMPT_TIMEOUT),
        ),
        (
            IDEM,
            AttemptEnd(C.RELEASED_SHUTDOWN, True),
            Outcome(T.CANCELLED, A.RELEASED, R.RELEASED_SHUTDOWN),
        ),
        (
            RECON,
            AttemptEnd(C.LEASE_EXPIRED, True),
            Outcome(T.NEEDS_REVIEW, A.LOST, R.LEASE_EXPIRED, UNCONFIRMED),
        ),
        (
            RECON,
            AttemptEnd(C.ATTEMPT_TIMEOUT, True),
            Outcome(T.NEEDS_REVIEW, A.TIMED_OUT, R.ATTEMPT_TIMEOUT, UNCONFIRMED),
        ),
        (
            RECON,
            AttemptEnd(C.RELEASED_SHUTDOWN, True),
            Outcome(T.NEEDS_REVIEW, A.RELEASED, R.RELEASED_SHUTDOWN, UNCONFIRMED),
        ),
        # never started: the handler provably did nothing
        (RECON, AttemptEnd(C.LEASE_EXPIRED, False), Outcome(T.CANCELLED, A.LOST, R.LEASE_EXPIRED)),
    ],
)
def test_end_after_cancel_request_o_state_1(
    safety: RecoverySafety, end: AttemptEnd, expected: Outcome
) -> None:
    """O-STATE-1 / task-control.md §3: a RECONCILE_ONLY task is never silently CANCELLED without the
    worker's confirmation; an IDEMPOTENT one is."""
    outcome = decide_end(facts(safety), end, NOW)
    assert outcome == expected
    source = T.RUNNING if end.started else T.LEASED
    assert outcome.task_state in TRANSITIONS[source]


@pytest.mark.parametrize("safety", [IDEM, RECON])
def test_cancelled_without_request_is_illegal(safety: RecoverySafety) -> None:
    with pytest.raises(IllegalTransition):
        decide_end(facts(safety, requested=False), AttemptEnd(C.CANCELLED, True), NOW)


def test_without_request_the_outcome_table_holds() -> None:
    """No cancel request: a retryable failure is still retried (the backoff path)."""
    outcome = decide_end(
        facts(IDEM, requested=False), AttemptEnd(C.FAILED, True, retryable=True), NOW
    )
    assert outcome.task_state is T.WAITING


REF = {"attempt_id": "a" * 32, "lease_token": "b" * 32}


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        ({}, None),
        ({"evidence": [{"key": "k", "kind": "note", "data": {"x": 1}}]}, None),
        ({"error": {"code": "x", "message": "m"}}, "error: not allowed"),
        ({"result": 1}, "result: not allowed"),
    ],
)
def test_cancelled_result_message(extra: dict[str, object], error: str | None) -> None:
    """The `cancelled` outcome carries neither result nor error (worker-protocol.md §3.6)."""
    raw = json.dumps({"type": "result", "msg_id": "m", **REF, "outcome": "cancelled", **extra})
    if error is None:
        parsed = parse_message(raw)
        assert isinstance(parsed, Result) and parsed.outcome is ResultOutcome.CANCELLED
        assert parsed.error is None and parsed.result_text is None
    else:
        with pytest.raises(InvalidArgument, match=error):
            parse_message(raw)


def _task(state: TaskState) -> Task:
    return Task(
        "t" * 32,
        "n" * 32,
        "q" * 32,
        state,
        3,
        "h",
        "v1",
        "v1",
        "{}",
        None,
        NOW,
        None,
        NOW + timedelta(hours=1),
        3_600_000,
        RECON,
        RetryPolicy(1, 0, 0, 30000),
        1,
        None,
        None,
        None,
        NOW,
        NOW,
        current_attempt_id="a" * 32,
    )


@pytest.mark.parametrize(
    ("state", "mode", "after", "completed", "attempt"),
    [
        (T.WAITING, CancelMode.NOW, T.CANCELLED, True, None),
        (T.LEASED, CancelMode.END_LEASE, T.CANCELLED, True, None),
        (T.RUNNING, CancelMode.REQUEST, T.RUNNING, False, "a" * 32),
    ],
)
def test_apply_cancel(
    state: TaskState, mode: CancelMode, after: TaskState, completed: bool, attempt: str | None
) -> None:
    later = NOW + timedelta(seconds=5)
    done = apply_cancel(_task(state), CancelPlan(mode, 4), later)
    assert done.state is after and done.revision == 4
    assert done.cancel_requested_at == later == done.updated_at
    assert (done.completed_at == later) is completed
    assert done.current_attempt_id == attempt
    assert replace(
        done,
        state=state,
        revision=3,
        cancel_requested_at=None,
        completed_at=None,
        updated_at=NOW,
        current_attempt_id="a" * 32,
    ) == _task(state)

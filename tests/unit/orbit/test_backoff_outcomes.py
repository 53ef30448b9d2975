"""Policy-retry backoff through the attempt outcome table: a retryable failure, or a lost attempt of
an IDEMPOTENT task, is re-queued at `now + delay` while the budget and the deadline allow."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from agentcall.orbit.domain.attempts import (
    AttemptEnd,
    AttemptState,
    EndCause,
    TaskErrorCode,
    TaskFacts,
    decide_end,
)
from agentcall.orbit.domain.backoff import JitteredBackoff, ceiling_ms, floor_ms
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.submit import RecoverySafety, RetryPolicy

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
POLICY = RetryPolicy(4, 1_000, 30_000, 30_000)
FAILED_RETRYABLE = AttemptEnd(EndCause.FAILED, started=True, retryable=True)
LOST = AttemptEnd(EndCause.LEASE_EXPIRED, started=True)
TIMED_OUT = AttemptEnd(EndCause.ATTEMPT_TIMEOUT, started=True)


def facts(
    used: int,
    deadline: timedelta = timedelta(hours=1),
    safety: RecoverySafety = RecoverySafety.IDEMPOTENT,
) -> TaskFacts:
    return TaskFacts(safety, POLICY, used, NOW + deadline, None)


@pytest.mark.parametrize("end", [FAILED_RETRYABLE, LOST, TIMED_OUT], ids=["failed", "lost", "tmo"])
@pytest.mark.parametrize("used", [1, 2, 3])
def test_requeued_after_jittered_delay(end: AttemptEnd, used: int) -> None:
    outcome = decide_end(facts(used), end, NOW, JitteredBackoff(random.Random(used)))
    assert outcome.task_state is TaskState.WAITING
    assert outcome.available_at is not None
    wait = outcome.available_at - NOW
    low, high = floor_ms(POLICY, used), ceiling_ms(POLICY, used)
    assert timedelta(milliseconds=low) <= wait <= timedelta(milliseconds=high)


@pytest.mark.parametrize(
    ("rule", "task", "end", "state", "code"),
    [
        (
            "budget exhausted",
            facts(4),
            FAILED_RETRYABLE,
            TaskState.FAILED,
            TaskErrorCode.ATTEMPTS_EXHAUSTED,
        ),
        (
            "delay would pass the deadline",
            facts(3, timedelta(seconds=2)),
            LOST,
            TaskState.FAILED,
            TaskErrorCode.DEADLINE_EXCEEDED,
        ),
        (
            "reconcile-only lost attempt is reviewed, not retried",
            facts(1, safety=RecoverySafety.RECONCILE_ONLY),
            LOST,
            TaskState.NEEDS_REVIEW,
            TaskErrorCode.ATTEMPT_LOST,
        ),
        (
            "non-retryable failure is final",
            facts(1),
            AttemptEnd(EndCause.FAILED, started=True),
            TaskState.FAILED,
            TaskErrorCode.HANDLER_FAILED,
        ),
    ],
)
def test_no_requeue(
    rule: str, task: TaskFacts, end: AttemptEnd, state: TaskState, code: TaskErrorCode
) -> None:
    outcome = decide_end(task, end, NOW, JitteredBackoff(random.Random(0)))
    assert (outcome.task_state, outcome.error_code) == (state, code), rule
    assert outcome.available_at is None, rule


def test_never_started_hand_back_is_not_delayed() -> None:
    """A released lease whose handler never ran is handed on at once: not a retry."""
    end = AttemptEnd(EndCause.RELEASED_SHUTDOWN, started=False)
    outcome = decide_end(facts(0), end, NOW, JitteredBackoff(random.Random(0)))
    assert (outcome.task_state, outcome.attempt_state) == (TaskState.WAITING, AttemptState.RELEASED)
    assert outcome.available_at == NOW

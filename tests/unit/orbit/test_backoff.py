"""Policy-retry backoff (docs/orbit/task-control.md §1): exponential, equal jitter, deadline."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcall.orbit.domain.backoff import (
    JitteredBackoff,
    Verdict,
    ceiling_ms,
    delay_ms,
    floor_ms,
    plan_retry,
)
from agentcall.orbit.domain.submit import RetryPolicy

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def policy(initial: int = 1_000, maximum: int = 30_000, attempts: int = 5) -> RetryPolicy:
    return RetryPolicy(attempts, initial, maximum, 60_000)


@pytest.mark.parametrize(
    ("rule", "pol", "attempts", "ceiling", "floor"),
    [
        ("first retry waits initial_delay_ms at most", policy(), 1, 1_000, 500),
        ("each attempt doubles the ceiling", policy(), 2, 2_000, 1_000),
        ("doubling continues", policy(), 4, 8_000, 4_000),
        ("max_delay_ms caps the ceiling", policy(), 6, 30_000, 15_000),
        ("cap holds for very many attempts", policy(), 10_000, 30_000, 15_000),
        ("zero initial delay means immediate retry", policy(0, 0), 3, 0, 0),
        ("odd ceiling: floor rounds up", policy(3, 3), 1, 3, 2),
        ("initial equal to max stays flat", policy(500, 500), 7, 500, 250),
    ],
)
def test_bounds_table(rule: str, pol: RetryPolicy, attempts: int, ceiling: int, floor: int) -> None:
    assert ceiling_ms(pol, attempts) == ceiling, rule
    assert floor_ms(pol, attempts) == floor, rule


def test_attempts_below_one_rejected() -> None:
    with pytest.raises(ValueError, match="attempts must be >= 1"):
        ceiling_ms(policy(), 0)


@pytest.mark.parametrize(
    ("rule", "pol", "attempts", "deadline_in", "verdict"),
    [
        ("retry while budget lasts", policy(attempts=3), 2, timedelta(hours=1), Verdict.RETRY),
        (
            "budget exhausted: no retry",
            policy(attempts=3),
            3,
            timedelta(hours=1),
            Verdict.ATTEMPTS_EXHAUSTED,
        ),
        (
            "single-attempt policy never retries",
            policy(0, 0, 1),
            1,
            timedelta(hours=1),
            Verdict.ATTEMPTS_EXHAUSTED,
        ),
        (
            "now + delay past the deadline: no retry",
            policy(10_000, 10_000),
            1,
            timedelta(seconds=4),
            Verdict.DEADLINE_EXCEEDED,
        ),
        (
            "now + delay exactly at the deadline: no retry",
            policy(1_000, 1_000, 2),
            1,
            timedelta(milliseconds=500),
            Verdict.DEADLINE_EXCEEDED,
        ),
        (
            "deadline already passed: no retry",
            policy(0, 0),
            1,
            timedelta(0),
            Verdict.DEADLINE_EXCEEDED,
        ),
    ],
)
def test_plan_table(
    rule: str, pol: RetryPolicy, attempts: int, deadline_in: timedelta, verdict: Verdict
) -> None:
    plan = plan_retry(pol, attempts, NOW, NOW + deadline_in, random.Random(7))
    assert plan.verdict is verdict, rule
    assert (plan.available_at is not None) == (verdict is Verdict.RETRY), rule


def test_same_seed_same_delays() -> None:
    first = [delay_ms(policy(), n, random.Random(42)) for n in range(1, 8)]
    again = [delay_ms(policy(), n, random.Random(42)) for n in range(1, 8)]
    assert first == again


def test_seam_adapter_uses_its_random_source() -> None:
    backoff = JitteredBackoff(random.Random(1))
    expected = delay_ms(policy(), 3, random.Random(1))
    assert backoff(policy(), 3) == expected
    assert 0 <= JitteredBackoff()(policy(0, 0), 0) == 0  # a never-started count is treated as 1


policies = st.builds(
    lambda initial, extra, attempts: RetryPolicy(attempts, initial, initial + extra, 60_000),
    st.integers(0, 10**7),
    st.integers(0, 10**9),
    st.integers(1, 100),
)


@given(policies, st.integers(1, 200), st.integers(0, 2**32))
def test_delay_within_floor_and_max(pol: RetryPolicy, attempts: int, seed: int) -> None:
    wait = delay_ms(pol, attempts, random.Random(seed))
    assert floor_ms(pol, attempts) <= wait <= ceiling_ms(pol, attempts) <= pol.max_delay_ms


@given(policies, st.integers(1, 200))
def test_ceiling_monotone_non_decreasing(pol: RetryPolicy, attempts: int) -> None:
    assert ceiling_ms(pol, attempts) <= ceiling_ms(pol, attempts + 1)


@given(policies, st.integers(1, 200), st.integers(0, 10**8), st.integers(0, 2**32))
def test_never_past_deadline(pol: RetryPolicy, attempts: int, left_ms: int, seed: int) -> None:
    deadline = NOW + timedelta(milliseconds=left_ms)
    plan = plan_retry(pol, attempts, NOW, deadline, random.Random(seed))
    if plan.verdict is Verdict.RETRY:
        assert plan.available_at is not None
        assert NOW <= plan.available_at < deadline
        assert attempts < pol.max_attempts
    else:
        assert plan.available_at is None

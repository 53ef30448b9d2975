"""Policy-retry backoff (docs/orbit/task-control.md §1): the delay before the next attempt.

Exponential with *equal jitter*: after `n` started attempts the ceiling is
`cap(n) = min(max_delay_ms, initial_delay_ms * 2^(n-1))` and the delay is drawn uniformly from
`[ceil(cap/2), cap]`. Half the ceiling is kept so a failing dependency always gets breathing room
(full jitter can draw 0 and hammer it again at once); the other half spreads a retry storm.
Pure: the random source and `now` are passed in, so tests are deterministic.
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass
from datetime import datetime

from agentcall.orbit.domain.submit import RetryPolicy
from agentcall.orbit.domain.times import milliseconds

_MAX_SHIFT = 62  # 2^62 ms is far above any allowed max_delay_ms; avoids huge integers


def ceiling_ms(policy: RetryPolicy, attempts: int) -> int:
    """Upper bound of the delay after `attempts` (>= 1) started attempts; non-decreasing."""
    if attempts < 1:
        raise ValueError(f"attempts must be >= 1, got {attempts}")
    grown = policy.initial_delay_ms << min(attempts - 1, _MAX_SHIFT)
    return min(policy.max_delay_ms, grown)


def floor_ms(policy: RetryPolicy, attempts: int) -> int:
    """Lower bound of the delay: half the ceiling, rounded up."""
    return (ceiling_ms(policy, attempts) + 1) // 2


def delay_ms(policy: RetryPolicy, attempts: int, rng: random.Random) -> int:
    """The jittered delay in `[floor_ms, ceiling_ms]`."""
    return rng.randint(floor_ms(policy, attempts), ceiling_ms(policy, attempts))


class Verdict(enum.StrEnum):
    RETRY = "RETRY"
    ATTEMPTS_EXHAUSTED = "ATTEMPTS_EXHAUSTED"
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"


@dataclass(frozen=True, slots=True)
class RetryPlan:
    """`available_at` of the next attempt, or None when the verdict is not RETRY."""

    verdict: Verdict
    available_at: datetime | None = None


def plan_retry(
    policy: RetryPolicy, attempts: int, now: datetime, deadline_at: datetime, rng: random.Random
) -> RetryPlan:
    """Retry at `now + delay` while the attempt budget lasts and the start precedes the deadline."""
    if attempts >= policy.max_attempts:
        return RetryPlan(Verdict.ATTEMPTS_EXHAUSTED)
    wait = delay_ms(policy, attempts, rng)
    if milliseconds(wait) >= deadline_at - now:
        return RetryPlan(Verdict.DEADLINE_EXCEEDED)
    return RetryPlan(Verdict.RETRY, now + milliseconds(wait))


class JitteredBackoff:
    """The `attempts.Backoff` seam, with its own random source (seed it in tests)."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()

    def __call__(self, policy: RetryPolicy, attempts: int) -> int:
        return delay_ms(policy, max(attempts, 1), self._rng)

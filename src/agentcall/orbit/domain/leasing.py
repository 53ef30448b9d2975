"""Lease decisions (docs/orbit/worker-protocol.md §5-§6): which task a worker may lease, the
times of a lease, heartbeat extension, the start fence, which deadline an attempt has hit, and
how free worker slots are shared across queues. Pure: `now` is always the database time."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from agentcall.orbit.domain.attempts import EndCause, TaskErrorCode
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.times import milliseconds

DEFAULT_LEASE_TTL_MS = 15_000
DEFAULT_RECONNECT_GRACE_MS = 5_000
MAX_CAPACITY = 1_000


@dataclass(frozen=True, slots=True, order=True)
class HandlerKey:
    handler: str
    handler_version: str


@dataclass(frozen=True, slots=True)
class WorkerOffer:
    """What one connection serves."""

    queues: frozenset[str]
    handlers: frozenset[HandlerKey]


@dataclass(frozen=True, slots=True)
class LeaseCandidate:
    state: TaskState
    queue_id: str
    handler: HandlerKey
    available_at: datetime
    start_deadline_at: datetime | None
    deadline_at: datetime
    attempt_count: int
    max_attempts: int


class Ineligible(enum.StrEnum):
    NOT_WAITING = "NOT_WAITING"
    QUEUE_NOT_SERVED = "QUEUE_NOT_SERVED"
    HANDLER_NOT_SERVED = "HANDLER_NOT_SERVED"
    NOT_YET_AVAILABLE = "NOT_YET_AVAILABLE"
    START_DEADLINE_PASSED = "START_DEADLINE_PASSED"
    DEADLINE_PASSED = "DEADLINE_PASSED"
    BUDGET_EXHAUSTED = "BUDGET_EXHAUSTED"


def ineligibility(task: LeaseCandidate, offer: WorkerOffer, now: datetime) -> Ineligible | None:
    """Why `task` may not be leased to `offer` now, or None. The SQL predicate of the store
    mirrors this function; a test checks them against each other."""
    checks: tuple[tuple[bool, Ineligible], ...] = (
        (task.state is not TaskState.WAITING, Ineligible.NOT_WAITING),
        (task.queue_id not in offer.queues, Ineligible.QUEUE_NOT_SERVED),
        (task.handler not in offer.handlers, Ineligible.HANDLER_NOT_SERVED),
        (task.available_at > now, Ineligible.NOT_YET_AVAILABLE),
        (now >= task.deadline_at, Ineligible.DEADLINE_PASSED),
        (_passed(task.start_deadline_at, now), Ineligible.START_DEADLINE_PASSED),
        (task.attempt_count >= task.max_attempts, Ineligible.BUDGET_EXHAUSTED),
    )
    return next((reason for failed, reason in checks if failed), None)


def is_eligible(task: LeaseCandidate, offer: WorkerOffer, now: datetime) -> bool:
    return ineligibility(task, offer, now) is None


def _passed(deadline: datetime | None, now: datetime) -> bool:
    return deadline is not None and now >= deadline


@dataclass(frozen=True, slots=True)
class LeaseTimes:
    leased_at: datetime
    lease_expires_at: datetime
    attempt_deadline_at: datetime


def plan_lease(
    now: datetime, attempt_timeout_ms: int, deadline_at: datetime, lease_ttl_ms: int
) -> LeaseTimes:
    """The attempt may run until min(now + attempt timeout, task deadline); the lease never
    outlives the attempt."""
    attempt_deadline = min(now + milliseconds(attempt_timeout_ms), deadline_at)
    return LeaseTimes(now, extend_lease(now, lease_ttl_ms, attempt_deadline), attempt_deadline)


def extend_lease(now: datetime, lease_ttl_ms: int, attempt_deadline_at: datetime) -> datetime:
    """A heartbeat (or `started`) renews the lease up to the attempt deadline."""
    return min(now + milliseconds(lease_ttl_ms), attempt_deadline_at)


def shorten_on_disconnect(
    now: datetime, lease_expires_at: datetime, reconnect_grace_ms: int
) -> datetime:
    """A closed connection keeps its leases only for the reconnect grace."""
    return min(lease_expires_at, now + milliseconds(reconnect_grace_ms))


def start_refusal(
    now: datetime, start_deadline_at: datetime | None, deadline_at: datetime
) -> TaskErrorCode | None:
    """The start fence: `started` at `now` is refused past either deadline."""
    if now >= deadline_at:
        return TaskErrorCode.DEADLINE_EXCEEDED
    if _passed(start_deadline_at, now):
        return TaskErrorCode.START_DEADLINE_EXCEEDED
    return None


def expiry_cause(
    now: datetime, lease_expires_at: datetime, attempt_deadline_at: datetime
) -> EndCause | None:
    """What ended a live attempt by `now`: its deadline (also when the lease ran to it) or a
    lease that was not renewed."""
    if now >= attempt_deadline_at:
        return EndCause.ATTEMPT_TIMEOUT
    if now >= lease_expires_at:
        return EndCause.LEASE_EXPIRED
    return None


def waiting_expiry(
    now: datetime, start_deadline_at: datetime | None, deadline_at: datetime
) -> TaskErrorCode | None:
    """A WAITING task that can no longer start fails with this code."""
    return start_refusal(now, start_deadline_at, deadline_at)


def share_slots(free: int, queues: Sequence[str], start: int) -> list[tuple[str, int]]:
    """Fairness across queues: `free` slots dealt round-robin from queue index `start`
    (rotated by the caller every round), so that each queue gets ⌈free / n⌉ or ⌊free / n⌋."""
    if free <= 0 or not queues:
        return []
    count = len(queues)
    base, extra = divmod(free, count)
    shares: list[tuple[str, int]] = []
    for offset in range(count):
        size = base + (1 if offset < extra else 0)
        if size:
            shares.append((queues[(start + offset) % count], size))
    return shares


def free_slots(capacity: int, in_flight: int) -> int:
    return max(0, capacity - in_flight)

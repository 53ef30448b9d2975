"""Lease eligibility, lease times, the start fence and fairness (worker-protocol.md §5-§6)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from agentcall.orbit.domain.attempts import EndCause, TaskErrorCode
from agentcall.orbit.domain.leasing import (
    HandlerKey,
    Ineligible,
    LeaseCandidate,
    LeaseTimes,
    WorkerOffer,
    expiry_cause,
    extend_lease,
    free_slots,
    ineligibility,
    is_eligible,
    plan_lease,
    share_slots,
    shorten_on_disconnect,
    start_refusal,
    waiting_expiry,
)
from agentcall.orbit.domain.states import TaskState

pytestmark = pytest.mark.unit

NOW = datetime(2026, 9, 17, 12, 0, 0, tzinfo=UTC)
S = timedelta(seconds=1)
Q1, Q2 = "1" * 32, "2" * 32
CONVERT = HandlerKey("file.convert", "v1")
OFFER = WorkerOffer(frozenset({Q1}), frozenset({CONVERT}))
BASE = LeaseCandidate(
    state=TaskState.WAITING,
    queue_id=Q1,
    handler=CONVERT,
    available_at=NOW,
    start_deadline_at=None,
    deadline_at=NOW + 60 * S,
    attempt_count=0,
    max_attempts=1,
)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, None),
        ({"available_at": NOW - S}, None),
        ({"state": TaskState.LEASED}, Ineligible.NOT_WAITING),
        ({"state": TaskState.CANCELLED}, Ineligible.NOT_WAITING),
        ({"queue_id": Q2}, Ineligible.QUEUE_NOT_SERVED),
        ({"handler": HandlerKey("file.convert", "v2")}, Ineligible.HANDLER_NOT_SERVED),
        ({"handler": HandlerKey("other", "v1")}, Ineligible.HANDLER_NOT_SERVED),
        ({"available_at": NOW + timedelta(microseconds=1)}, Ineligible.NOT_YET_AVAILABLE),
        ({"deadline_at": NOW}, Ineligible.DEADLINE_PASSED),
        ({"start_deadline_at": NOW}, Ineligible.START_DEADLINE_PASSED),
        ({"start_deadline_at": NOW + S}, None),
        ({"attempt_count": 1}, Ineligible.BUDGET_EXHAUSTED),
        ({"attempt_count": 1, "max_attempts": 2}, None),
    ],
)
def test_lease_eligibility(changes: dict[str, object], expected: Ineligible | None) -> None:
    """Leasing kernel: available_at passed, pair served, within start and task deadline,
    budget left; a handler version not served stays WAITING."""
    task = dataclasses.replace(BASE, **changes)  # type: ignore[arg-type]
    assert ineligibility(task, OFFER, NOW) == expected
    assert is_eligible(task, OFFER, NOW) == (expected is None)


@pytest.mark.parametrize(
    ("attempt_timeout_ms", "deadline", "ttl_ms", "expected"),
    [
        (30_000, 60 * S, 15_000, LeaseTimes(NOW, NOW + 15 * S, NOW + 30 * S)),
        (30_000, 10 * S, 15_000, LeaseTimes(NOW, NOW + 10 * S, NOW + 10 * S)),  # task deadline caps
        (5_000, 60 * S, 15_000, LeaseTimes(NOW, NOW + 5 * S, NOW + 5 * S)),  # lease ≤ attempt
    ],
)
def test_plan_lease(
    attempt_timeout_ms: int, deadline: timedelta, ttl_ms: int, expected: LeaseTimes
) -> None:
    assert plan_lease(NOW, attempt_timeout_ms, NOW + deadline, ttl_ms) == expected


@pytest.mark.parametrize(
    ("attempt_deadline", "expected"),
    [(60 * S, NOW + 15 * S), (10 * S, NOW + 10 * S)],
)
def test_heartbeat_extends_up_to_attempt_deadline(
    attempt_deadline: timedelta, expected: datetime
) -> None:
    assert extend_lease(NOW, 15_000, NOW + attempt_deadline) == expected


@pytest.mark.parametrize(
    ("expires", "expected"), [(NOW + 15 * S, NOW + 5 * S), (NOW + 2 * S, NOW + 2 * S)]
)
def test_disconnect_grace(expires: datetime, expected: datetime) -> None:
    assert shorten_on_disconnect(NOW, expires, 5_000) == expected


@pytest.mark.parametrize(
    ("start_deadline", "deadline", "expected"),
    [
        (None, 60 * S, None),
        (S, 60 * S, None),
        (timedelta(0), 60 * S, TaskErrorCode.START_DEADLINE_EXCEEDED),
        (-S, 60 * S, TaskErrorCode.START_DEADLINE_EXCEEDED),
        (None, timedelta(0), TaskErrorCode.DEADLINE_EXCEEDED),
        (-S, -S, TaskErrorCode.DEADLINE_EXCEEDED),
    ],
)
def test_start_fence_and_waiting_expiry(
    start_deadline: timedelta | None, deadline: timedelta, expected: TaskErrorCode | None
) -> None:
    """Start deadline passed -> FAILED without running; the same rule fails WAITING tasks."""
    start = None if start_deadline is None else NOW + start_deadline
    assert start_refusal(NOW, start, NOW + deadline) == expected
    assert waiting_expiry(NOW, start, NOW + deadline) == expected


@pytest.mark.parametrize(
    ("lease", "attempt", "expected"),
    [
        (S, 10 * S, None),
        (timedelta(0), 10 * S, EndCause.LEASE_EXPIRED),
        (-S, 10 * S, EndCause.LEASE_EXPIRED),
        (timedelta(0), timedelta(0), EndCause.ATTEMPT_TIMEOUT),  # heartbeats ran to the deadline
        (S, timedelta(0), EndCause.ATTEMPT_TIMEOUT),
    ],
)
def test_expiry_cause(lease: timedelta, attempt: timedelta, expected: EndCause | None) -> None:
    assert expiry_cause(NOW, NOW + lease, NOW + attempt) == expected


@pytest.mark.parametrize(
    ("free", "queues", "start", "expected"),
    [
        (0, ["a", "b"], 0, []),
        (3, [], 0, []),
        (4, ["a", "b"], 0, [("a", 2), ("b", 2)]),
        (3, ["a", "b"], 0, [("a", 2), ("b", 1)]),
        (3, ["a", "b"], 1, [("b", 2), ("a", 1)]),
        (1, ["a", "b", "c"], 2, [("c", 1)]),
        (5, ["a"], 0, [("a", 5)]),
    ],
)
def test_share_slots(
    free: int, queues: list[str], start: int, expected: list[tuple[str, int]]
) -> None:
    assert share_slots(free, queues, start) == expected


def test_share_slots_rotation_is_fair_over_rounds() -> None:
    """With one free slot per round and a rotating start, every queue is served equally."""
    queues = ["a", "b", "c"]
    served: Counter[str] = Counter()
    for round_no in range(300):
        for queue, size in share_slots(1, queues, round_no % len(queues)):
            served[queue] += size
    assert served == Counter({"a": 100, "b": 100, "c": 100})


@pytest.mark.parametrize(("capacity", "in_flight", "expected"), [(8, 3, 5), (8, 8, 0), (0, 2, 0)])
def test_free_slots(capacity: int, in_flight: int, expected: int) -> None:
    assert free_slots(capacity, in_flight) == expected


@pytest.mark.parametrize(
    ("sizes", "order"),
    [([3, 1], [0, 1, 0, 0]), ([1, 1, 1], [0, 1, 2]), ([0, 2], [1, 1]), ([], [])],
)
def test_rows_of_one_lease_query_are_dealt_round_robin(sizes: list[int], order: list[int]) -> None:
    """Several connections asking for the same queue share one query fairly (§5)."""
    from agentcall.orbit.execution.kernel import _deal

    assert list(_deal(sizes)) == order

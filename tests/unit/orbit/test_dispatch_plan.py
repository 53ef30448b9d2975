"""Which queues a dispatch round asks, what it learns, and which connection an accepted task
is leased to eagerly (agentcall.orbit.domain.dispatch, worker-protocol.md §5 "Push and notify",
"Eager dispatch"): table-driven over plain data."""

from __future__ import annotations

import pytest

from agentcall.orbit.domain.dispatch import (
    EVERY,
    Hinted,
    Offer,
    Seat,
    candidates,
    eager_seat,
    pending_after,
    shares,
    wants_more,
)
from agentcall.orbit.domain.leasing import HandlerKey

pytestmark = pytest.mark.unit
Q = ("q1", "q2", "q3")


def offer(free: int, pending: set[str], rotation: int = 0, queues: tuple[str, ...] = Q) -> Offer:
    return Offer(free, queues, rotation, frozenset(pending))


@pytest.mark.parametrize(
    ("case", "the_offer", "hinted", "expected"),
    [
        ("a full round asks every queue", offer(3, set()), EVERY, Q),
        ("nothing hinted, nothing pending: nothing", offer(3, set()), frozenset(), ()),
        ("a submit's queue only", offer(3, set()), frozenset({"q2"}), ("q2",)),
        ("a hint for a queue it does not serve", offer(3, set()), frozenset({"x"}), ()),
        ("pending and hinted, in its order", offer(3, {"q3"}), frozenset({"q1"}), ("q1", "q3")),
        ("pending alone (a freed slot)", offer(1, {"q2"}), frozenset(), ("q2",)),
    ],
)
def test_candidates(case: str, the_offer: Offer, hinted: Hinted, expected: tuple[str, ...]) -> None:
    assert candidates(the_offer, hinted) == expected, case


@pytest.mark.parametrize(
    ("case", "the_offer", "hinted", "expected"),
    [
        ("free slots over the hinted queue alone", offer(4, set()), frozenset({"q2"}), [("q2", 4)]),
        ("shared over the candidates", offer(4, {"q1"}), frozenset({"q3"}), [("q1", 2), ("q3", 2)]),
        ("no free slot: nothing asked", offer(0, {"q1"}), EVERY, []),
        (
            "rotation starts at the next candidate",
            offer(1, {"q1", "q2"}, rotation=1),
            frozenset(),
            [("q2", 1)],
        ),
    ],
)
def test_shares(
    case: str, the_offer: Offer, hinted: Hinted, expected: list[tuple[str, int]]
) -> None:
    assert shares(the_offer, hinted) == expected, case


@pytest.mark.parametrize(
    ("case", "the_offer", "hinted", "full", "expected"),
    [
        ("a short fill leaves the set", offer(2, {"q1"}), frozenset(), {"q1": False}, set()),
        ("a full fill stays: more may wait", offer(2, {"q1"}), frozenset(), {"q1": True}, {"q1"}),
        (
            "a hinted queue not asked (no free slot) becomes pending",
            offer(0, set()),
            frozenset({"q2"}),
            {},
            {"q2"},
        ),
        ("a full round not asked: every queue pending", offer(0, set()), EVERY, {}, set(Q)),
        (
            "a full round drained everywhere",
            offer(3, set(Q)),
            EVERY,
            {"q1": False, "q2": False, "q3": False},
            set(),
        ),
        (
            "a share of 0 keeps the queue",
            offer(1, {"q1", "q2"}),
            frozenset(),
            {"q1": False},
            {"q2"},
        ),
        (
            "a pending queue not hinted stays",
            offer(1, {"q3"}),
            frozenset({"q1"}),
            {"q1": True},
            {"q1", "q3"},
        ),
    ],
)
def test_pending_after(
    case: str, the_offer: Offer, hinted: Hinted, full: dict[str, bool], expected: set[str]
) -> None:
    assert pending_after(the_offer, hinted, full) == frozenset(expected), case


@pytest.mark.parametrize(
    ("the_offer", "expected"),
    [(offer(1, {"q1"}), True), (offer(0, {"q1"}), False), (offer(5, set()), False)],
)
def test_wants_more(the_offer: Offer, expected: bool) -> None:
    assert wants_more(the_offer) is expected


def test_rounds_converge_for_one_connection() -> None:
    """Each round either fills slots or drops a queue: a link is never asked forever."""
    stock = {"q1": 1, "q2": 0, "q3": 7}
    current = offer(4, set(Q))
    for _ in range(10):
        if not wants_more(current):
            break
        full = {}
        granted = 0
        for queue, size in shares(current, frozenset()):
            got = min(size, stock[queue])
            stock[queue] -= got
            granted += got
            full[queue] = got == size
        current = Offer(
            current.free - granted,
            Q,
            current.rotation + 1,
            pending_after(current, frozenset(), full),
        )
    assert not wants_more(current)
    assert current.free == 0 and stock == {"q1": 0, "q2": 0, "q3": 4}


H = HandlerKey("h", "v1")
OTHER = HandlerKey("h", "v2")


def seat(
    free: int,
    queues: set[str],
    pending: frozenset[str] = frozenset(),
    handlers: frozenset[HandlerKey] = frozenset({H}),
    idle: bool = True,
) -> Seat:
    return Seat(free, frozenset(queues), handlers, frozenset(pending), idle)


@pytest.mark.parametrize(
    ("case", "seats", "expected"),
    [
        ("no connection", [], None),
        ("the only free one", [seat(1, {"q1"})], 0),
        ("no free slot", [seat(0, {"q1"})], None),
        ("busy: fed by rounds", [seat(7, {"q1"}, idle=False)], None),
        ("the idle one, not the freest", [seat(7, {"q1"}, idle=False), seat(1, {"q1"})], 1),
        ("the most free first", [seat(1, {"q1"}), seat(3, {"q1"}), seat(2, {"q1"})], 1),
        ("ties: the first", [seat(2, {"q1"}), seat(2, {"q1"})], 0),
        ("not its queue", [seat(4, {"q2"}), seat(1, {"q1"})], 1),
        ("not its handler version", [seat(4, {"q1"}, handlers=frozenset({OTHER}))], None),
        (
            "older ready work may wait in the queue",
            [seat(4, {"q1"}, pending=frozenset({"q1"}))],
            None,
        ),
        (
            "pending for another serving connection: FIFO first",
            [seat(4, {"q1"}), seat(0, {"q1"}, pending=frozenset({"q1"}))],
            None,
        ),
        (
            "pending elsewhere on another queue does not matter",
            [seat(4, {"q1", "q2"}, pending=frozenset({"q2"}))],
            0,
        ),
        (
            "pending on a connection of another handler does not matter",
            [
                seat(4, {"q1"}),
                seat(0, {"q1"}, pending=frozenset({"q1"}), handlers=frozenset({OTHER})),
            ],
            0,
        ),
    ],
)
def test_eager_seat(case: str, seats: list[Seat], expected: int | None) -> None:
    assert eager_seat(seats, "q1", H) == expected, case

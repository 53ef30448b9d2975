"""Which queues a dispatch round asks for each connection, and what the answers teach it
(worker-protocol.md §5 "Dispatch"). Pure: the hub keeps the state, this decides.

A connection asks only queues that may hold work for it:
- its *pending* queues: its last fill there got every slot it asked (more may wait), or the
  queue was hinted while the connection could not be asked (no free slot, or a share of 0);
- the queues *hinted* since the last round: a submit, a requeue or a retry names its queue;
- every queue on a full round (`hinted` is `EVERY`): the periodic tick, which also finds
  tasks that became ready by time (retry backoff, `available_at`), and events that name no
  queue.

A fill that came back short removes its queue from the pending set: the queue had nothing more
for this connection's handlers, and new work there comes with a hint. So an idle server asks
one queue per submit, not every queue of every connection, and a freed slot asks nothing
unless its connection may have left work waiting.

Eager dispatch (`eager_seat`): a task accepted while a connection of this process sits idle
is leased in its own submit transaction, with no lease round at all (as Temporal's eager
activity dispatch skips its matching service when a worker is at hand). Only idle connections
(nothing in flight) take eager work, one task each per transaction: a busy one is fed by
rounds, which lease many tasks per transaction and frame, at a lower cost per task."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agentcall.orbit.domain.leasing import HandlerKey, share_slots

EVERY = None  # `hinted` of a full round: every queue of every connection is asked
Hinted = frozenset[str] | None


@dataclass(frozen=True, slots=True)
class Offer:
    """One connection as a round sees it."""

    free: int
    queues: tuple[str, ...]  # in the connection's order
    rotation: int
    pending: frozenset[str]


def candidates(offer: Offer, hinted: Hinted) -> tuple[str, ...]:
    """The queues this round considers for the connection, in its order."""
    if hinted is EVERY:
        return offer.queues
    return tuple(q for q in offer.queues if q in offer.pending or q in hinted)


def shares(offer: Offer, hinted: Hinted) -> list[tuple[str, int]]:
    """(queue, slots) to ask: the free slots dealt fairly over the candidate queues."""
    return share_slots(offer.free, candidates(offer, hinted), offer.rotation)


def pending_after(offer: Offer, hinted: Hinted, full: Mapping[str, bool]) -> frozenset[str]:
    """The pending set after the round; `full[queue]`: that fill got every slot it asked.
    A candidate left unasked stays (or becomes) pending; a short fill leaves the set."""
    left = set(offer.pending).union(candidates(offer, hinted))
    left.difference_update(queue for queue, got_all in full.items() if not got_all)
    return frozenset(left)


def wants_more(offer: Offer) -> bool:
    """A connection with a free slot and a pending queue needs another round at once."""
    return offer.free > 0 and bool(offer.pending)


@dataclass(frozen=True, slots=True)
class Seat:
    """One connection as eager dispatch sees it."""

    free: int
    queues: frozenset[str]
    handlers: frozenset[HandlerKey]
    pending: frozenset[str]
    idle: bool  # nothing in flight (and nothing taken yet in this transaction)


def eager_seat(seats: Sequence[Seat], queue_id: str, handler: HandlerKey) -> int | None:
    """The connection a just-accepted, ready task goes to in its submit transaction: among
    the idle ones that serve its queue and handler, the one with the most free slots. None
    when none is idle with a free slot, or when the queue is pending for a connection serving
    it: older ready tasks may wait there, and they go first (rounds lease in readiness
    order)."""
    serving = [
        (index, seat)
        for index, seat in enumerate(seats)
        if queue_id in seat.queues and handler in seat.handlers
    ]
    if any(queue_id in seat.pending for _, seat in serving):
        return None
    free = [(seat.free, -index) for index, seat in serving if seat.idle and seat.free > 0]
    return -max(free)[1] if free else None

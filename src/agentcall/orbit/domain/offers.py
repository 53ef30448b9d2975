"""Remote eager dispatch between the server processes of one database (docs/orbit/scaling.md
"Remote eager dispatch"): which offered slot a submitted task may take, and what a process
believes about the other processes' offers. Pure.

A process whose worker connection sits idle (nothing in flight, a lease ask for it found
nothing) publishes an *offer* row for one slot of it; a submit on another process that no
local connection takes leases the task to that slot inside its own transaction, and the
offering process only delivers the lease. An offer names the connection's namespace, queues
and handlers: a task may take it only if all three match (the rest of eligibility, "ready
now", is the task's own: `agentcall.orbit.domain.leasing.is_eligible`).

The belief keeps a submit from paying a query when nobody offers: a process looks for offers
on a queue only while another process said, within `BELIEF_S`, that it offers on it (the
`orbit.offer.1` datagram, repeated while the offer stands), and stops as soon as a look finds
none."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from agentcall.orbit.domain.leasing import HandlerKey

BELIEF_S = 3.0  # an offer datagram is repeated about every second while the offer stands


@dataclass(frozen=True, slots=True)
class OfferTerms:
    """What an offer row says about whom it serves."""

    offer_id: str
    server_id: str
    namespace_id: str
    queues: frozenset[str]
    handlers: frozenset[HandlerKey]


@dataclass(frozen=True, slots=True)
class Wanted:
    """A task looking for an offered slot."""

    namespace_id: str
    queue_id: str
    handler: HandlerKey


def match_offers(
    tasks: Sequence[Wanted], offers: Sequence[OfferTerms], dead: Collection[str]
) -> list[int | None]:
    """For each task in order, the index of the offer it takes (oldest offer first, as given),
    or None. An offer is taken at most once; never one of a process known dead (`dead`: server
    ids whose registration expired): it would never deliver the lease. A process that
    registered since this one last read the registrations is not known dead: its offers are
    taken (if the claim's datagram cannot reach it yet, its own round delivers)."""
    taken: set[int] = set()
    chosen: list[int | None] = []
    for task in tasks:
        pick = next(
            (
                i
                for i, offer in enumerate(offers)
                if i not in taken
                and offer.server_id not in dead
                and offer.namespace_id == task.namespace_id
                and task.queue_id in offer.queues
                and task.handler in offer.handlers
            ),
            None,
        )
        if pick is not None:
            taken.add(pick)
        chosen.append(pick)
    return chosen


@dataclass(slots=True)
class Belief:
    """Which queues another process offers slots on, as last heard (monotonic seconds)."""

    hold_s: float = BELIEF_S
    until: dict[str, float] = field(default_factory=dict)

    def offered(self, queue_ids: Sequence[str], at: float) -> None:
        for queue_id in queue_ids:
            self.until[queue_id] = at + self.hold_s

    def believes(self, queue_id: str, at: float) -> bool:
        until = self.until.get(queue_id)
        if until is None:
            return False
        if until <= at:
            del self.until[queue_id]
            return False
        return True

    def found_none(self, queue_ids: Collection[str]) -> None:
        """A look found no offer for these queues: stop looking until the next datagram."""
        for queue_id in queue_ids:
            self.until.pop(queue_id, None)

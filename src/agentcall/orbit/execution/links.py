"""One open worker connection as the hub sees it (`Link`), the slot of an idle one offered to
the other server processes (`StandingOffer`), and what the hub asks of the offering side
(`Offering`, implemented by `agentcall.orbit.execution.offers.OfferDesk`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from agentcall.orbit.domain.dispatch import Offer
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.leasing import HandlerKey, free_slots
from agentcall.orbit.execution.acks import Grant, Peer

Send = Callable[[dict[str, JsonValue]], Awaitable[None]]
SendMany = Callable[[list[dict[str, JsonValue]]], Awaitable[None]]


@dataclass(slots=True)
class StandingOffer:
    """One slot of an idle link offered to the other server processes (remote eager dispatch,
    `agentcall.orbit.execution.offers`): `attempt_id` is reserved in the link's `in_flight` while it
    stands, so nothing here hands the slot out twice. `busy`: being published, withdrawn or
    used by a round; only then may it change hands."""

    offer_id: str
    attempt_id: str
    lease_token: str
    open: bool = False  # its row is committed: another process may claim it
    busy: bool = True


@dataclass(eq=False, slots=True)
class Link:
    """One open worker connection."""

    peer: Peer
    handlers: frozenset[HandlerKey]
    queue_order: tuple[str, ...]
    capacity: int
    send: Send
    urgent: Send | None = None  # `send` without waiting for the rest of the loop turn
    send_many: SendMany | None = None  # `send` of several messages at once, in order
    in_flight: set[str] = field(default_factory=set)
    rotation: int = 0
    open: bool = True
    connected_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    seen_at: datetime = field(default_factory=lambda: datetime.now(UTC))  # last heartbeat
    # the queues that may still hold work for this link (`agentcall.orbit.domain.dispatch`): all of
    # them until a round asked; a freed slot runs a round only while this is not empty
    pending: frozenset[str] = field(init=False)
    offered: StandingOffer | None = None  # its slot offered to the other processes

    def __post_init__(self) -> None:
        self.pending = frozenset(self.queue_order)

    @property
    def free(self) -> int:
        return free_slots(self.capacity, len(self.in_flight)) if self.open else 0

    @property
    def held(self) -> int:
        """Attempts really in flight: not counting the slot reserved by a standing offer."""
        offered = self.offered
        return len(self.in_flight) - (1 if offered and offered.attempt_id in self.in_flight else 0)

    @property
    def idle(self) -> bool:
        """Nothing in flight but, perhaps, its offered slot."""
        return not self.in_flight or (
            self.offered is not None and self.in_flight == {self.offered.attempt_id}
        )

    @property
    def spare(self) -> StandingOffer | None:
        """Its open offer when that is the only way to a free slot here: taking the slot back
        (a withdraw, in the transaction that uses it) may fail, if another process claimed it."""
        offer = self.offered
        usable = offer is not None and offer.open and not offer.busy and self.open
        return offer if usable and self.free == 0 else None

    @property
    def saturated(self) -> bool:
        """It may be leaving work waiting: a freed slot should run a round."""
        return bool(self.pending)

    def offer(self) -> Offer:
        free = self.free or (1 if self.spare is not None else 0)
        return Offer(free, self.queue_order, self.rotation, self.pending)


class Offering(Protocol):
    """Remote eager dispatch's offering side (`agentcall.orbit.execution.offers.OfferDesk`): the hub
    tells it when a link is idle with nothing to lease, takes an offered slot back for its own
    rounds through it, and delivers the leases other processes' submits claimed."""

    def wants(self, link: Link) -> bool: ...

    async def publish(self, link: Link) -> str | None: ...

    def taking(self, link: Link) -> StandingOffer | None: ...

    def settled(self, link: Link, offer: StandingOffer, withdrawn: bool) -> None: ...

    async def take_back(self, link: Link) -> str | None: ...

    async def claimed(self) -> list[str]: ...

    async def delivery(self, offer_id: str) -> tuple[Link, Grant] | None: ...

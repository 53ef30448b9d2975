"""Pure pieces of remote eager dispatch (docs/orbit/scaling.md "Remote eager dispatch"): which
offered slot a submitted task may take, the belief that keeps submits from looking for offers
nobody made, the offer and claim datagrams (strictly decoded: hostile input is ignored, never
raised), and when a connection counts as idle with its slot offered (O-STATE-1: the offered
slot is reserved, so a connection never holds more attempts than its capacity)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.domain.offers import Belief, OfferTerms, Wanted, match_offers
from agentcall.orbit.domain.peers import (
    CLAIM_MAGIC,
    MAGIC,
    MAX_DATAGRAM,
    OFFER_MAGIC,
    Claimed,
    Hint,
    Offered,
    Registration,
    dead_servers,
    decode,
    decode_message,
    encode,
    encode_claim,
)
from agentcall.orbit.execution.acks import Peer
from agentcall.orbit.execution.hub import Hub
from agentcall.orbit.execution.links import Link, StandingOffer
from agentcall.orbit.execution.offers import OfferDesk
from agentcall.orbit.protocol.messages import WorkerIdentity

pytestmark = pytest.mark.unit

NS, OTHER_NS = "a" * 32, "b" * 32
Q1, Q2 = "1" * 32, "2" * 32
S1, S2, DEAD = "c" * 32, "d" * 32, "e" * 32
H1, H2 = HandlerKey("demo.noop", "v1"), HandlerKey("demo.work", "v1")
O1, O2, T1 = "f" * 32, "9" * 32, "8" * 32


def _offer(
    offer_id: str,
    server: str = S1,
    ns: str = NS,
    queues: tuple[str, ...] = (Q1,),
    handlers: tuple[HandlerKey, ...] = (H1,),
) -> OfferTerms:
    return OfferTerms(offer_id, server, ns, frozenset(queues), frozenset(handlers))


@pytest.mark.parametrize(
    ("tasks", "offers", "expected"),
    [
        # the oldest offer that serves namespace, queue and handler
        ([Wanted(NS, Q1, H1)], [_offer(O1), _offer(O2)], [0]),
        # another namespace, another queue, another handler: not taken
        ([Wanted(OTHER_NS, Q1, H1)], [_offer(O1)], [None]),
        ([Wanted(NS, Q2, H1)], [_offer(O1)], [None]),
        ([Wanted(NS, Q1, H2)], [_offer(O1)], [None]),
        # each offer once; a later task takes the next one, or none
        ([Wanted(NS, Q1, H1)] * 3, [_offer(O1), _offer(O2)], [0, 1, None]),
        # a dead process's offer is never taken (it would never deliver the lease); one of a
        # process not read yet (registered since) is
        ([Wanted(NS, Q1, H1)], [_offer(O1, DEAD), _offer(O2, S2)], [1]),
        ([Wanted(NS, Q1, H1)], [_offer(O1, "7" * 32)], [0]),
        # a connection serving several queues and handlers serves each
        ([Wanted(NS, Q2, H2)], [_offer(O1, queues=(Q1, Q2), handlers=(H1, H2))], [0]),
        # matching is per task: a mismatch does not consume the offer
        ([Wanted(NS, Q2, H1), Wanted(NS, Q1, H1)], [_offer(O1)], [None, 0]),
        ([], [_offer(O1)], []),
        ([Wanted(NS, Q1, H1)], [], [None]),
    ],
)
def test_which_offer_a_task_takes(
    tasks: list[Wanted], offers: list[OfferTerms], expected: list[int | None]
) -> None:
    assert match_offers(tasks, offers, {DEAD}) == expected


def test_a_process_whose_registration_expired_is_dead_one_not_read_yet_is_not() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [
        Registration(S1, "h", 1, now - timedelta(seconds=4.9)),
        Registration(DEAD, "h", 2, now - timedelta(seconds=5.1)),
    ]
    assert dead_servers(rows, now) == {DEAD}
    assert dead_servers([], now) == frozenset()


def test_the_belief_holds_for_a_while_after_each_offer_and_ends_on_an_empty_look() -> None:
    belief = Belief(hold_s=3.0)
    assert not belief.believes(Q1, 0.0)  # nobody offered: no look, no query
    belief.offered([Q1, Q2], 10.0)
    assert belief.believes(Q1, 12.9) and belief.believes(Q2, 12.9)
    assert not belief.believes(Q1, 13.0)  # not repeated: the offers are gone
    belief.offered([Q1], 20.0)
    belief.found_none([Q1])  # a look found none
    assert not belief.believes(Q1, 20.1)
    belief.offered([Q1], 21.0)  # the next repeat of a standing offer
    assert belief.believes(Q1, 21.1)


def test_offer_and_claim_datagrams_round_trip() -> None:
    (offered,) = encode([Q2, Q1, "junk"], OFFER_MAGIC)
    assert offered == OFFER_MAGIC + b" " + Q1.encode() + b" " + Q2.encode()
    assert decode_message(offered) == Offered((Q1, Q2))
    assert decode(offered) == ()  # not a hint: a hint-only reader ignores it
    claim = encode_claim(O1, T1)
    assert claim == CLAIM_MAGIC + f" {O1} {T1}".encode()
    assert decode_message(claim) == Claimed(O1, T1)
    assert decode_message(encode([Q1])[0]) == Hint((Q1,))
    with pytest.raises(ValueError, match="offer id"):
        encode_claim("not an id", T1)


@pytest.mark.parametrize(
    "datagram",
    [
        b"",
        CLAIM_MAGIC,
        CLAIM_MAGIC + f" {O1}".encode(),  # one id
        CLAIM_MAGIC + f" {O1} {T1} {T1}".encode(),  # three
        CLAIM_MAGIC + f" {O1}  {T1}".encode(),  # an empty word
        CLAIM_MAGIC + f" {O1.upper()} {T1}".encode(),  # ids are lowercase hex
        OFFER_MAGIC,
        OFFER_MAGIC + b" " + Q1.encode() + b"\n",
        b"orbit.offer.2 " + Q1.encode(),  # unknown version
        b"orbit.claim " + O1.encode() + b" " + T1.encode(),
        OFFER_MAGIC + b" " + b"\xff" * 32,
        OFFER_MAGIC + (b" " + Q1.encode()) * 40,  # longer than MAX_DATAGRAM
    ],
)
def test_hostile_datagrams_are_ignored(datagram: bytes) -> None:
    assert decode_message(datagram) is None


@given(st.binary(max_size=MAX_DATAGRAM + 50))
def test_no_datagram_raises_and_what_decodes_is_well_formed(datagram: bytes) -> None:
    message = decode_message(datagram)
    if message is None:
        return
    assert datagram.split(b" ")[0] in (MAGIC, OFFER_MAGIC, CLAIM_MAGIC)
    if isinstance(message, Claimed):
        assert encode_claim(message.offer_id, message.task_id) == datagram
    else:
        assert message.queue_ids and len(datagram) <= MAX_DATAGRAM


@given(st.lists(st.sampled_from([Q1, Q2, O1, T1]), min_size=1, max_size=4), st.booleans())
def test_any_valid_message_survives_the_wire(ids: list[str], offer: bool) -> None:
    magic = OFFER_MAGIC if offer else MAGIC
    (datagram,) = encode(ids, magic)
    kind = Offered if offer else Hint
    assert decode_message(datagram) == kind(tuple(sorted(set(ids))))


def _link(capacity: int, in_flight: set[str], offered: StandingOffer | None) -> Link:
    worker = WorkerIdentity("w", "1" * 32, None, None, None)
    peer = Peer("2" * 32, "3" * 32, NS, frozenset({Q1}), worker)
    link = Link(peer, frozenset({H1}), (Q1,), capacity, send=None)  # type: ignore[arg-type]
    link.in_flight = set(in_flight)
    link.offered = offered
    return link


OPEN = StandingOffer(O1, "a1", "token", open=True, busy=False)


@pytest.mark.parametrize(
    ("capacity", "in_flight", "offered", "idle", "spare", "free_for_rounds", "held"),
    [
        (1, set(), None, True, False, 1, 0),
        (1, {"a1"}, OPEN, True, True, 1, 0),  # only the offered slot: still idle, usable
        (1, {"a1"}, replace(OPEN, busy=True), True, False, 0, 0),  # being withdrawn or used
        (1, {"a1"}, replace(OPEN, open=False), True, False, 0, 0),  # still being published
        (2, {"a1"}, OPEN, True, False, 1, 0),  # a free slot besides the offer: no withdraw
        (2, {"a1", "x"}, OPEN, False, True, 1, 1),
        (1, {"x"}, None, False, False, 0, 1),
    ],
)
def test_an_offered_slot_is_reserved_but_the_connection_stays_idle(
    capacity: int,
    in_flight: set[str],
    offered: StandingOffer | None,
    idle: bool,
    spare: bool,
    free_for_rounds: int,
    held: int,
) -> None:
    link = _link(capacity, in_flight, offered)
    assert link.idle is idle
    assert link.held == held  # what the workers' listing shows in flight
    assert (link.spare is not None) is spare
    assert link.offer().free == free_for_rounds
    assert link.free == capacity - len(in_flight)  # never more than the capacity


@pytest.mark.parametrize(
    ("live", "capacity", "in_flight", "offered", "wants"),
    [
        ((), 1, set(), None, False),  # alone: nobody could claim an offer, none is published
        (("p",), 1, set(), None, True),
        (("p",), 1, {"x"}, None, False),  # busy: rounds feed it
        (("p",), 1, {"a1"}, OPEN, False),  # offered already
    ],
)
def test_which_links_offer_a_slot(
    live: tuple[str, ...],
    capacity: int,
    in_flight: set[str],
    offered: StandingOffer | None,
    wants: bool,
) -> None:
    desk = OfferDesk(cast(Any, None), S1, lambda queue_ids: None, lambda: live)
    assert desk.wants(_link(capacity, in_flight, offered)) is wants


class _Desk:
    """The offering side as the hub sees it, recording what the hub asks of it."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def wants(self, link: Link) -> bool:
        return link.offered is None and link.idle

    async def publish(self, link: Link) -> str | None:
        self.calls.append("publish")
        return None

    async def take_back(self, link: Link) -> str | None:
        self.calls.append("take back")
        return None


@pytest.mark.parametrize(
    ("capacity", "in_flight", "offered", "pending", "calls"),
    [
        (1, set(), None, frozenset(), ["publish"]),  # idle, nothing left to ask
        (1, set(), None, frozenset({Q1}), []),  # a queue may still hold work: ask it first
        (1, {"x"}, None, frozenset(), []),  # busy
        (1, {"a1"}, OPEN, frozenset(), []),  # offered already
        (0, {"a1"}, OPEN, frozenset(), ["take back"]),  # `flow` 0: no slot left for it
    ],
)
async def test_when_the_hub_offers_a_slot_or_takes_it_back(
    capacity: int,
    in_flight: set[str],
    offered: StandingOffer | None,
    pending: frozenset[str],
    calls: list[str],
) -> None:
    desk = _Desk()
    hub = Hub(
        cast(Any, None),
        cast(Any, None),
        cast(Any, None),
        tick_s=1,
        sweep_s=1,
        offers=cast(Any, desk),
    )
    link = _link(capacity, in_flight, offered)
    link.pending = pending
    hub.add(link, {"ending"})  # an attempt of this link ends: the hub reconsiders its slot
    hub.ended("ending")
    await asyncio.sleep(0.01)
    assert desk.calls == calls

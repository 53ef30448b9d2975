"""When a freed slot wakes the dispatcher (orbit.workers.hub): only if its connection may have
left work waiting — its last fill was full, or it was not asked on every queue — never after a
round in which every queue of it came back short (that would be an empty lease transaction per
finished task). A notify (submit, requeue, flow) always wakes it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from orbit.workers.acks import Peer
from orbit.workers.batch import Batcher
from orbit.workers.hub import Hub, Link
from orbit.workers.kernel import Kernel, LeaseAsk
from orbit.workers.messages import WorkerIdentity
from orbit.workers.upkeep import Upkeep

pytestmark = pytest.mark.unit


@dataclass
class _Grant:
    attempt_id: str

    def message(self) -> dict[str, Any]:
        return {"type": "lease", "attempt_id": self.attempt_id}


@dataclass
class _Batcher:
    """Leases from per-queue stocks, like the kernel: at most what is asked."""

    stock: dict[str, int]
    asked: list[tuple[str, int]] = field(default_factory=list)
    made: int = 0

    async def submit(self, kind: str, ask: LeaseAsk) -> list[_Grant]:
        assert kind == "lease"
        self.asked.append((ask.queue_id, ask.size))
        count = min(ask.size, self.stock.get(ask.queue_id, 0))
        self.stock[ask.queue_id] = self.stock.get(ask.queue_id, 0) - count
        grants = [_Grant(f"a{self.made + i}") for i in range(count)]
        self.made += count
        return grants


def _hub(stock: dict[str, int]) -> tuple[Hub, _Batcher]:
    fake = _Batcher(stock)
    hub = Hub(cast(Batcher, fake), cast(Kernel, None), cast(Upkeep, None), tick_s=1, sweep_s=1)
    return hub, fake


def _link(hub: Hub, queues: tuple[str, ...], capacity: int) -> Link:
    worker = WorkerIdentity("w", "i" * 32, "sdk", "host", 1)
    peer = Peer(f"c{len(hub.links)}", "t", "n", frozenset(queues), worker)
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    link = Link(peer, frozenset(), queues, capacity, send)
    hub.add(link, set())
    return link


async def _round(hub: Hub) -> bool:
    hub._wake.clear()
    return await hub.dispatch_round()


async def test_a_slot_freed_after_a_short_fill_does_not_wake() -> None:
    hub, fake = _hub({"q1": 1, "q2": 0})
    link = _link(hub, ("q1", "q2"), 4)
    assert await _round(hub) is False  # 1 of 2 from q1, 0 of 2 from q2: both drained
    assert link.in_flight == {"a0"} and not link.saturated
    hub.ended("a0")
    assert not hub._wake.is_set(), "an empty lease round would run for a freed slot"
    hub.notify()  # a submit: always a round
    assert hub._wake.is_set()


async def test_a_slot_freed_after_a_full_fill_wakes() -> None:
    hub, fake = _hub({"q1": 10})
    link = _link(hub, ("q1",), 2)
    assert await _round(hub) is True  # got all 2 asked: more may wait
    assert link.saturated and link.free == 0
    hub.ended("a0")
    assert hub._wake.is_set()
    await _round(hub)
    assert fake.asked[-1] == ("q1", 1) and link.in_flight == {"a1", "a2"}


async def test_a_link_with_no_free_slot_in_the_round_stays_saturated() -> None:
    hub, _ = _hub({"q1": 0})
    busy = _link(hub, ("q1",), 1)
    busy.in_flight.add("held")
    hub.owner["held"] = busy.peer.connection_id
    idle = _link(hub, ("q1",), 1)
    await _round(hub)
    assert not idle.saturated and busy.saturated
    hub.ended("held")
    assert hub._wake.is_set()


async def test_a_queue_left_out_of_the_share_keeps_the_link_saturated() -> None:
    """One free slot over two queues asks only one of them: the other may hold work."""
    hub, fake = _hub({"q1": 0, "q2": 5})
    link = _link(hub, ("q1", "q2"), 2)
    link.in_flight.add("held")
    hub.owner["held"] = link.peer.connection_id
    await _round(hub)
    assert fake.asked == [("q1", 1)] and link.saturated
    hub.ended("held")
    assert hub._wake.is_set()

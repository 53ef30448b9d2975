"""When the dispatcher runs a round and which queues it asks (orbit.execution.hub over
orbit.domain.dispatch, worker-protocol.md §5 "Push and notify"): a freed slot wakes it only if
its connection may have left work waiting — its last fill was full, or a queue of it was not
asked — never after a round in which every queue of it came back short (that would be an empty
lease transaction per finished task). A submit's notify asks only its queue; a notify naming no
queue and the periodic full round ask every queue."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, cast

import pytest

from agentcall.orbit.domain.dispatch import EVERY, Hinted
from agentcall.orbit.execution.acks import Grant, Peer
from agentcall.orbit.execution.batch import Batcher, Kind
from agentcall.orbit.execution.hub import Hub, Link
from agentcall.orbit.execution.kernel import LEASE, Kernel, LeaseAsk
from agentcall.orbit.execution.upkeep import Upkeep
from agentcall.orbit.protocol.messages import WorkerIdentity

pytestmark = pytest.mark.unit


_LEASED_AT = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class _Grant:
    attempt_id: str
    # what the hub observes of a grant (lease wait, the attempt's task and handler)
    task: Any = field(
        default_factory=lambda: SimpleNamespace(id="t" * 32, handler="h", available_at=_LEASED_AT)
    )
    leased_at: datetime = _LEASED_AT

    def message(self) -> dict[str, Any]:
        return {"type": "lease", "attempt_id": self.attempt_id}


@dataclass
class _Batcher:
    """Leases from per-queue stocks, like the kernel: at most what is asked."""

    stock: dict[str, int]
    asked: list[tuple[str, int]] = field(default_factory=list)
    made: int = 0

    async def submit(self, kind: Kind[LeaseAsk, list[Grant]], ask: LeaseAsk) -> list[_Grant]:
        assert kind is LEASE
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


async def _round(hub: Hub, hinted: Hinted = EVERY) -> bool:
    hub._wake.clear()
    return await hub.dispatch_round(hinted)


async def _notified_round(hub: Hub) -> bool:
    """The round `_dispatch_forever` runs after a wake: the hints since the last round."""
    hub._wake.clear()
    return await hub.dispatch_round(hub._take_hints())


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
    assert await _round(hub) is False  # got all 2 asked (more may wait), but no slot is left
    assert link.saturated and link.free == 0
    hub.ended("a0")
    assert hub._wake.is_set()
    await _notified_round(hub)
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


async def test_a_submit_asks_only_its_queue() -> None:
    """An idle server runs one lease query per submit, not one per queue of every link."""
    hub, fake = _hub({"q1": 0, "q2": 0, "q3": 0})
    drained = _link(hub, ("q1", "q2"), 8)
    other = _link(hub, ("q3",), 8)
    await _round(hub)  # the first round asks everything and finds it empty
    assert not drained.saturated and not other.saturated
    fake.asked.clear()
    fake.stock["q2"] = 1
    hub.notify("q2")
    assert await _notified_round(hub) is False
    assert fake.asked == [("q2", 8)] and drained.in_flight == {"a0"}
    hub.ended("a0")  # its fill was short: the freed slot needs no round
    assert not hub._wake.is_set()


async def test_a_hinted_queue_of_a_full_link_waits_for_its_free_slot() -> None:
    hub, fake = _hub({"q1": 0})
    link = _link(hub, ("q1",), 1)
    await _round(hub)
    link.in_flight.add("held")
    hub.owner["held"] = link.peer.connection_id
    fake.stock["q1"] = 1
    hub.notify("q1")
    await _notified_round(hub)
    assert fake.asked == [("q1", 1)], "a link without a free slot was asked"
    assert link.saturated
    hub.ended("held")
    assert hub._wake.is_set()
    await _notified_round(hub)
    assert fake.asked[-1] == ("q1", 1) and link.in_flight == {"a0"}


async def test_a_notify_naming_no_queue_asks_every_queue() -> None:
    hub, fake = _hub({"q1": 0, "q2": 0})
    _link(hub, ("q1", "q2"), 2)
    await _round(hub)
    fake.asked.clear()
    hub.notify()
    await _notified_round(hub)
    assert sorted(fake.asked) == [("q1", 1), ("q2", 1)]


async def test_a_full_round_runs_every_tick_even_while_wakes_keep_coming() -> None:
    """Work no notify names (ready by time, submitted to another process) is found within a
    tick although submits to another queue wake the dispatcher all the time."""
    fake = _Batcher({"busy": 0, "quiet": 0})
    hub = Hub(cast(Batcher, fake), cast(Kernel, None), cast(Upkeep, None), tick_s=0.05, sweep_s=1)
    _link(hub, ("busy", "quiet"), 4)
    loop = asyncio.create_task(hub._dispatch_forever())
    try:
        for _ in range(40):  # 0.2 s of wakes every 5 ms, all naming "busy"
            hub.notify("busy")
            await asyncio.sleep(0.005)
    finally:
        loop.cancel()
    quiet = [ask for ask in fake.asked if ask[0] == "quiet"]
    busy = [ask for ask in fake.asked if ask[0] == "busy"]
    assert len(busy) >= 10, busy
    assert 2 <= len(quiet) <= 6, f"full rounds in 0.2 s at a 0.05 s tick: {len(quiet)}"

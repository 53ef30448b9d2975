"""When the dispatcher runs a round and which queues it asks (agentcall.orbit.execution.hub
over agentcall.orbit.domain.dispatch, worker-protocol.md §5 "Push and notify"): a freed slot
wakes it only if its connection may have left work waiting — its last fill was full, or a
queue of it was not asked — never after a round in which every queue of it came back short
(that would be an empty lease transaction per finished task). A submit's notify asks only its
queue; a notify naming no queue and the periodic full round ask every queue.

The hub runs as in the server (`start`): its dispatcher leases through the product's kernel
from tasks submitted to the in-memory store twin (agentcall.orbit.store.memory); a test sees
only what the hub does in public (the lease asks it makes, the leases its links hold, the
messages they are sent), never its private state."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from tests.support.orbit_twin import TwinOrbit, twin_orbit

pytestmark = pytest.mark.unit


async def _world(stock: dict[str, int], tick_s: float = 3600) -> TwinOrbit:
    world = await twin_orbit(tuple(stock), tick_s=tick_s)
    for name, count in stock.items():
        await world.stock(name, count)
    return world


async def _settled() -> None:
    """Let the dispatcher finish what a wake started: the twin does no I/O, so a round takes
    a few turns of the event loop (no clock involved)."""
    for _ in range(50):
        await asyncio.sleep(0)


@contextlib.asynccontextmanager
async def _running(world: TwinOrbit) -> AsyncIterator[None]:
    """The hub's loops started; the first full round over."""
    world.hub.start()
    try:
        await _settled()
        yield
    finally:
        await world.hub.stop()


async def test_a_slot_freed_after_a_short_fill_does_not_wake() -> None:
    world = await _world({"q1": 1, "q2": 0})
    link = world.link(("q1", "q2"), 4)
    async with _running(world):
        assert world.asked() == [("q1", 2), ("q2", 2)]  # both drained: no round again
        (attempt_id,) = link.in_flight
        assert not link.saturated
        world.hub.ended(attempt_id)
        await _settled()
        assert len(world.asked()) == 2, "an empty lease round would run for a freed slot"
        world.hub.notify()  # a submit: always a round
        await _settled()
        assert len(world.asked()) > 2


async def test_a_slot_freed_after_a_full_fill_wakes() -> None:
    world = await _world({"q1": 10})
    link = world.link(("q1",), 2)
    async with _running(world):
        assert world.asked() == [("q1", 2)]  # got all 2 asked (more may wait), no slot left
        assert link.saturated and link.free == 0
        first = sorted(link.in_flight)[0]
        world.hub.ended(first)
        await _settled()
        assert world.asked()[-1] == ("q1", 1) and len(link.in_flight) == 2
        assert first not in link.in_flight


async def test_a_link_with_no_free_slot_in_the_round_stays_saturated() -> None:
    world = await _world({"q1": 0})
    busy = world.link(("q1",), 1, held=frozenset({"held"}))
    idle = world.link(("q1",), 1)
    async with _running(world):
        assert world.asked() == [("q1", 1)]  # only the idle link was asked
        assert not idle.saturated and busy.saturated
        world.hub.ended("held")
        await _settled()
        assert world.asked() == [("q1", 1), ("q1", 1)]


async def test_a_queue_left_out_of_the_share_is_asked_next() -> None:
    """One free slot over two queues asks only one of them; the other may hold work, so the
    dispatcher asks it in the round right after, and the full link stays saturated."""
    world = await _world({"q1": 0, "q2": 5})
    link = world.link(("q1", "q2"), 2, held=frozenset({"held"}))
    async with _running(world):
        assert world.asked() == [("q1", 1), ("q2", 1)]
        assert len(link.in_flight) == 2 and link.saturated
        world.hub.ended("held")
        await _settled()
        assert len(world.asked()) == 3 and len(link.in_flight) == 2


async def test_a_submit_asks_only_its_queue() -> None:
    """An idle server runs one lease query per submit, not one per queue of every link."""
    world = await _world({"q1": 0, "q2": 0, "q3": 0})
    drained = world.link(("q1", "q2"), 8)
    other = world.link(("q3",), 8)
    async with _running(world):  # the first round asks everything and finds it empty
        assert sorted(world.asked()) == [("q1", 4), ("q2", 4), ("q3", 8)]
        assert not drained.saturated and not other.saturated
        world.batcher.asked.clear()
        await world.stock("q2", 1)
        world.hub.notify(world.queues["q2"])
        await _settled()
        assert world.asked() == [("q2", 8)] and len(drained.in_flight) == 1
        world.hub.ended(next(iter(drained.in_flight)))  # its fill was short: no round
        await _settled()
        assert world.asked() == [("q2", 8)]


async def test_a_hinted_queue_of_a_full_link_waits_for_its_free_slot() -> None:
    world = await _world({"q1": 0})
    link = world.link(("q1",), 1)
    async with _running(world):
        assert world.asked() == [("q1", 1)]
        world.hub.add(link, {"held"})  # the worker now holds its only slot
        await world.stock("q1", 1)
        world.hub.notify(world.queues["q1"])
        await _settled()
        assert world.asked() == [("q1", 1)], "a link without a free slot was asked"
        assert link.saturated
        world.hub.ended("held")
        await _settled()
        assert world.asked() == [("q1", 1), ("q1", 1)] and len(link.in_flight) == 1
        assert [message["type"] for message in world.sent] == ["lease"]


async def test_a_notify_naming_no_queue_asks_every_queue() -> None:
    world = await _world({"q1": 0, "q2": 0})
    world.link(("q1", "q2"), 2)
    async with _running(world):
        world.batcher.asked.clear()
        world.hub.notify()
        await _settled()
        assert sorted(world.asked()) == [("q1", 1), ("q2", 1)]


async def test_a_full_round_runs_every_tick_even_while_wakes_keep_coming() -> None:
    """Work no notify names (ready by time, submitted to another process) is found within a
    tick although submits to another queue wake the dispatcher all the time."""
    world = await _world({"busy": 0, "quiet": 0}, tick_s=0.05)
    world.link(("busy", "quiet"), 4)
    world.hub.start()
    try:
        for _ in range(40):  # 0.2 s of wakes every 5 ms, all naming "busy"
            world.hub.notify(world.queues["busy"])
            await asyncio.sleep(0.005)
    finally:
        await world.hub.stop()
    quiet = [ask for ask in world.asked() if ask[0] == "quiet"]
    busy = [ask for ask in world.asked() if ask[0] == "busy"]
    assert len(busy) >= 10, busy
    assert 2 <= len(quiet) <= 6, f"full rounds in 0.2 s at a 0.05 s tick: {len(quiet)}"

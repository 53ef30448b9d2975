"""The cell client's event stream through the shared TCP proxy to a real cell: a refused
cell is retried with the client's reconnect policy (the failures in a row grow, then reset
by the hello of the connection that succeeds), and a slow link still streams; no event is
lost or repeated either way. (Cut links: `test_stream.py`.)"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from agentcall.cell.client import CellClient, Event, EventStream, EventType, ReconnectPolicy
from tests.support.tcp_proxy import TcpProxy

from .harness import CellProcess
from .helpers import plan, unique

pytestmark = pytest.mark.integration
FAST = ReconnectPolicy(base_s=0.05, cap_s=0.2)


async def collect_call(stream: EventStream, call_id: str) -> list[Event]:
    out: list[Event] = []
    async with asyncio.timeout(20):
        async for event in stream:
            if event.call_id == call_id:
                out.append(event)
                if event.type == EventType.RECORDING_READY:
                    return out
    return out


async def until(check: Callable[[], bool], timeout: float = 15.0) -> None:
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.02)


async def test_a_refused_cell_is_retried_until_it_accepts_and_nothing_is_lost(
    cell_process: CellProcess,
) -> None:
    async with CellClient(cell_process.url) as direct:
        info = await direct.info()
        with TcpProxy("127.0.0.1", cell_process.port) as proxy:
            proxy.cut()  # the cell refuses every connection
            client = CellClient(f"http://127.0.0.1:{proxy.port}", reconnect=FAST)
            async with client:
                stream = client.events(after=info.last_seq, boot_id=info.boot_id)
                reading = asyncio.create_task(stream.__anext__())
                await until(lambda: stream.failures >= 3)
                assert not stream.connected and not reading.done()
                call = await direct.originate(plan(unique("answer")))  # events while away
                proxy.restore()
                first = await asyncio.wait_for(reading, 15)
                assert stream.failures == 0, "the hello reset the count"
                rest = await collect_call(stream, call.call_id)
                await stream.aclose()
        reference = direct.events(after=info.last_seq, boot_id=info.boot_id)
        expected = await collect_call(reference, call.call_id)
        await reference.aclose()
    got = [e for e in [first, *rest] if e.call_id == call.call_id]
    assert [e.seq for e in got] == [e.seq for e in expected]


async def test_a_slow_link_still_streams_every_event_in_order(
    cell_process: CellProcess,
) -> None:
    with TcpProxy("127.0.0.1", cell_process.port) as proxy:
        proxy.delay_s = 0.05  # every chunk held
        async with CellClient(f"http://127.0.0.1:{proxy.port}", reconnect=FAST) as cell:
            info = await cell.info()
            stream = cell.events(after=info.last_seq, boot_id=info.boot_id)
            call = await cell.originate(plan(unique("answer")))
            got = await collect_call(stream, call.call_id)
            await stream.aclose()
    assert got[0].type == EventType.DIALING and got[-1].type == EventType.RECORDING_READY
    assert [e.seq for e in got] == sorted({e.seq for e in got})

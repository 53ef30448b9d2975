"""The event stream: ordered, resumable from a sequence number, reconnecting by itself."""

from __future__ import annotations

import asyncio

import pytest

from agentcall.cell.client import CellClient, Event, EventType
from tests.support.tcp_proxy import TcpProxy

from .harness import CellProcess
from .helpers import plan, unique

pytestmark = pytest.mark.integration


async def _collect(
    stream: object, call_id: str, stop: EventType, n: int | None = None
) -> list[Event]:
    out: list[Event] = []
    async with asyncio.timeout(15):
        async for event in stream:  # type: ignore[attr-defined]
            if event.call_id != call_id:
                continue
            out.append(event)
            if event.type == stop or (n is not None and len(out) >= n):
                break
    return out


async def test_resume_after_a_sequence_number_loses_and_repeats_nothing(cell: CellClient) -> None:
    info = await cell.info()
    first = cell.events(after=info.last_seq, boot_id=info.boot_id)
    call = await cell.originate(plan(unique("answer")))
    head = await _collect(first, call.call_id, EventType.RECORDING_READY, n=3)
    await first.aclose()
    resumed = cell.events(after=head[-1].seq, boot_id=info.boot_id)
    tail = await _collect(resumed, call.call_id, EventType.RECORDING_READY)
    await resumed.aclose()
    whole = cell.events(after=info.last_seq, boot_id=info.boot_id)
    everything = await _collect(whole, call.call_id, EventType.RECORDING_READY)
    await whole.aclose()
    assert [e.seq for e in head + tail] == [e.seq for e in everything]
    assert everything[0].type == EventType.DIALING
    assert everything[-1].type == EventType.RECORDING_READY


async def test_stream_reconnects_through_cut_links_without_gaps(
    cell_process: CellProcess,
) -> None:
    with TcpProxy("127.0.0.1", cell_process.port) as proxy:
        async with CellClient(f"http://127.0.0.1:{proxy.port}") as cell:
            info = await cell.info()
            stream = cell.events(after=info.last_seq, boot_id=info.boot_id)
            call = await cell.originate(plan(unique("answer")))
            got = await _collect(stream, call.call_id, EventType.RECORDING_READY, n=2)
            for _ in range(3):
                proxy.drop()
                got += await _collect(stream, call.call_id, EventType.RECORDING_READY, n=1)
            if got[-1].type != EventType.RECORDING_READY:
                got += await _collect(stream, call.call_id, EventType.RECORDING_READY)
            await stream.aclose()
            assert stream.reconnects >= 1
            reference = cell.events(after=info.last_seq, boot_id=info.boot_id)
            expected = await _collect(reference, call.call_id, EventType.RECORDING_READY)
            await reference.aclose()
    assert [e.seq for e in got] == [e.seq for e in expected]


async def test_bad_after_is_refused(cell_process: CellProcess) -> None:
    import websockets

    url = cell_process.url.replace("http", "ws") + "/v1/events?after=-1"
    async with websockets.connect(url) as ws:
        with pytest.raises(websockets.exceptions.ConnectionClosed) as info:
            await ws.recv()
    assert info.value.rcvd is not None and info.value.rcvd.code == 1008

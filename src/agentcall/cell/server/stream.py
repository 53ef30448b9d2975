"""``WS /v1/events?after=SEQ[&boot_id=ID]``: the ordered event stream with resume.

The server first sends ``{"type": "hello", "boot_id", "last_seq", "reset"}``; then
``{"type": "event", "event": {...}}`` messages in sequence order, and
``{"type": "heartbeat", "last_seq"}`` when idle. If ``boot_id`` names an earlier
boot, ``after`` is ignored, ``reset`` is true and the stream starts from the
beginning of this boot. With ``batch=1`` the events ready at once travel in one
``{"type": "events", "events": [...]}`` message (in order) instead of one message each.
"""

from __future__ import annotations

import asyncio
import contextlib

from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from agentcall.cell.runtime.service import CellService

HEARTBEAT_S = 10.0


def _after(websocket: WebSocket) -> int | None:
    raw = websocket.query_params.get("after", "0")
    return int(raw) if raw.isdigit() and len(raw) <= 19 else None


async def _pump(websocket: WebSocket, service: CellService, after: int, batch: bool) -> None:
    while True:
        events = await service.wait_events(after, HEARTBEAT_S)
        if not events:
            await websocket.send_json({"type": "heartbeat", "last_seq": service.events.last_seq})
            continue
        if batch:
            await websocket.send_json({"type": "events", "events": [e.to_json() for e in events]})
        else:
            for event in events:
                await websocket.send_json({"type": "event", "event": event.to_json()})
        after = events[-1].seq


async def _until_closed(websocket: WebSocket) -> None:
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return


async def events(websocket: WebSocket) -> None:
    service: CellService = websocket.app.state.service
    after = _after(websocket)
    await websocket.accept()
    if after is None:
        await websocket.close(code=1008, reason="after must be a non-negative integer")
        return
    boot_id = websocket.query_params.get("boot_id")
    reset = bool(boot_id) and boot_id != service.boot_id
    hello = {"type": "hello", "boot_id": service.boot_id, "last_seq": service.events.last_seq}
    await websocket.send_json({**hello, "reset": reset})
    service.metrics.subscribers.inc()
    batch = websocket.query_params.get("batch") == "1"
    pump = asyncio.create_task(_pump(websocket, service, 0 if reset else after, batch))
    closed = asyncio.create_task(_until_closed(websocket))
    try:
        await asyncio.wait({pump, closed}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        service.metrics.subscribers.dec()
        for task in (pump, closed):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, WebSocketDisconnect, Exception):
                await task


ROUTES = [WebSocketRoute("/v1/events", events)]

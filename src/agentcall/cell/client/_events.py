"""The event stream as an async iterator that resumes and reconnects by itself.

It remembers the boot id and the last sequence number it yielded; after a lost
connection it reconnects (after the reconnect policy's delay, ``_reconnect.py``: capped,
jittered, reset by every hello) asking for ``after=<last seq>``, so no
event is lost or repeated. When the cell restarted in between (new boot id), it
yields one synthetic ``cell.restarted`` event (seq 0, data: previous_boot_id,
boot_id) and continues from the first event of the new boot.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import AsyncGenerator, Callable
from typing import Any
from urllib.parse import urlencode

import websockets
from websockets.exceptions import WebSocketException

from agentcall.cell.client._errors import CellProtocolError
from agentcall.cell.client._models import Event
from agentcall.cell.client._reconnect import STREAM, Backoff
from agentcall.cell.domain.model import EventType

RETRYABLE = (OSError, TimeoutError, WebSocketException, EOFError)


class EventStream:
    def __init__(
        self,
        ws_url: str,
        *,
        after: int = 0,
        boot_id: str | None = None,
        policy: Backoff = STREAM,
        jitter: Callable[[], float] = random.random,
        open_timeout_s: float = 10.0,
    ) -> None:
        self._ws_url = ws_url
        self.last_seq = after
        self.boot_id = boot_id
        self.connected = False
        self.reconnects = 0
        self.failures = 0  # lost or refused connections in a row; 0 once one said hello
        self._policy, self._jitter, self._open_timeout = policy, jitter, open_timeout_s
        self._gen = self._run()

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Event:
        return await self._gen.__anext__()

    async def aclose(self) -> None:
        await self._gen.aclose()

    def _url(self) -> str:
        query: dict[str, Any] = {"after": self.last_seq, "batch": 1}
        if self.boot_id:
            query["boot_id"] = self.boot_id
        return f"{self._ws_url}?{urlencode(query)}"

    async def _run(self) -> AsyncGenerator[Event, None]:
        while True:
            try:
                # aclosing: closing this generator closes the connection's at once (an async
                # for alone leaves it to the garbage collector, which closes it on another
                # turn, after the socket may already be gone)
                async with contextlib.aclosing(self._connection()) as events:
                    async for event in events:
                        yield event
            except RETRYABLE:
                pass
            self.connected = False
            self.reconnects += 1
            self.failures += 1
            await asyncio.sleep(self._policy.delay(self.failures, self._jitter()))

    async def _connection(self) -> AsyncGenerator[Event, None]:
        # No per-message deflate: the stream is local and compressing every frame cost more
        # CPU on both ends than it saved.
        async with websockets.connect(
            self._url(), open_timeout=self._open_timeout, max_size=2**24, compression=None
        ) as ws:
            hello = _message(await ws.recv())
            if hello.get("type") != "hello" or not isinstance(hello.get("boot_id"), str):
                raise CellProtocolError("the event stream did not start with hello")
            self.connected, self.failures = True, 0
            restarted = self._hello(hello["boot_id"])
            if restarted is not None:
                yield restarted
            async for raw in ws:
                for body in _event_bodies(_message(raw)):
                    event = Event.from_json(body)
                    if event.seq <= self.last_seq:
                        continue  # already yielded before a reconnect
                    self.last_seq = event.seq
                    yield event

    def _hello(self, boot_id: str) -> Event | None:
        previous, self.boot_id = self.boot_id, boot_id
        if previous is None or previous == boot_id:
            return None
        self.last_seq = 0
        data = {"previous_boot_id": previous, "boot_id": boot_id}
        return Event(0, boot_id, EventType.CELL_RESTARTED.value, None, None, data)


def _event_bodies(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The events of one message: ``event`` (one) or ``events`` (a batch, in order)."""
    if message.get("type") == "event":
        return [message.get("event") or {}]
    if message.get("type") == "events":
        events = message.get("events")
        if not isinstance(events, list):
            raise CellProtocolError("the event stream sent a batch without a list of events")
        return [e if isinstance(e, dict) else {} for e in events]
    return []


def _message(raw: str | bytes) -> dict[str, Any]:
    try:
        message = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise CellProtocolError("the event stream sent invalid JSON") from None
    if not isinstance(message, dict):
        raise CellProtocolError("the event stream sent a non-object message")
    return message

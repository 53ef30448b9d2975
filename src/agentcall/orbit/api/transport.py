"""One `write` system call per HTTP response instead of two.

uvicorn writes a response's status line and headers when the app sends
`http.response.start`, and the body when it sends `http.response.body`: two `write` calls
and two TCP segments for every small JSON answer. On loopback and on virtual machines a
`write` that wakes the peer is one of the dearest things a request does (tens of
microseconds of CPU). `CoalescingTransport` holds a write that arrives with nothing held and
sends it together with the next one, so headers and body leave in one call, in the same
step as before; a write that no second one follows (a streamed chunk, a 100 Continue) is
sent at the next turn of the event loop. Bytes and their order are unchanged; close, abort
and protocol changes send or drop what is held first, as the transport itself would.

`CoalescingHttpToolsProtocol` is uvicorn's httptools protocol on such a transport; a
WebSocket upgrade hands the plain transport to the WebSocket protocol (nothing is held then).

When the server begins a graceful stop it calls the app's `DRAIN` hook (lifespan state)
before anything else, so that long-polls answer at once
(`agentcall.orbit.execution.waiters.Waiters.drain`).

It also bounds what a slow or hostile client can hold (uvicorn's httptools protocol has no
such limits; its only timer is the keep-alive one, between requests):

- a request's line and headers must arrive within `HEADER_TIMEOUT_S` of its first byte (or
  of the connection, for a client that connects and sends nothing): else 408 and close;
- they must fit in `MAX_HEADER_BYTES`: else 431 and close, without reading further;
- its body must arrive within `BODY_TIMEOUT_S` of the end of the headers: else the
  connection is closed (the handler sees the client gone: answered 499, not an error).

Why a subclass of uvicorn's httptools protocol (a class of uvicorn's implementation, not of
its documented API): uvicorn's public options offer neither of the two. `http="httptools"`
has no header or body timeout and no header size limit, and `http="h11"` only a size limit
(`h11_max_incomplete_event_size`) on a parser written in Python. Measured on loopback
against a bare ASGI app answering a 90-byte JSON body (16 keep-alive connections, 48,000
POSTs a round, 5 rounds, the server process's user+system CPU per request): 30.8-31.5 µs
(fastest-median) with the public `http="httptools"`, 25.4-29.6 µs with this protocol. The
subclass stays; `tests/integration/orbit/test_http_edges.py` pins the behaviour it adds, so an
uvicorn upgrade that changes the class underneath fails there first.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

log = logging.getLogger("orbit.api")
HEADER_TIMEOUT_S = 10.0
BODY_TIMEOUT_S = 30.0
MAX_HEADER_BYTES = 32_768  # request line and headers (a worker's upgrade needs under 1 KiB)
LINGER_S = 1.0  # after a refusal, what the client still sends is read and dropped this long
DRAIN = "orbit.drain"  # lifespan state: what ends the app's long-polls when the server stops


class CoalescingTransport(asyncio.Transport):
    def __init__(self, inner: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self.inner = inner
        self._loop = loop
        self._held: bytes | None = None
        self._scheduled = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._held is None:
            self._held = bytes(data)
            if not self._scheduled:
                self._scheduled = True
                self._loop.call_soon(self._flush_soon)
            return
        held, self._held = self._held, None
        self.inner.write(held + bytes(data))

    def writelines(self, list_of_data: Any) -> None:
        self.write(b"".join(list_of_data))

    def flush(self) -> None:
        held, self._held = self._held, None
        if held is not None and not self.inner.is_closing():
            self.inner.write(held)

    def _flush_soon(self) -> None:
        self._scheduled = False
        self.flush()

    def close(self) -> None:
        self.flush()
        self.inner.close()

    def abort(self) -> None:
        self._held = None
        self.inner.abort()

    def write_eof(self) -> None:
        self.flush()
        self.inner.write_eof()

    def can_write_eof(self) -> bool:
        return self.inner.can_write_eof()

    def is_closing(self) -> bool:
        return self.inner.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.inner.get_extra_info(name, default)

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.flush()
        self.inner.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self.inner.get_protocol()

    def is_reading(self) -> bool:
        return self.inner.is_reading()

    def pause_reading(self) -> None:
        self.inner.pause_reading()

    def resume_reading(self) -> None:
        self.inner.resume_reading()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self.inner.set_write_buffer_limits(high, low)

    def get_write_buffer_size(self) -> int:
        return self.inner.get_write_buffer_size() + len(self._held or b"")

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self.inner.get_write_buffer_limits()


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    header_timeout_s = HEADER_TIMEOUT_S
    body_timeout_s = BODY_TIMEOUT_S
    max_header_bytes = MAX_HEADER_BYTES
    _in_head = True  # reading a request line and headers (or waiting for the next request)
    _head_bytes = 0
    _tail = b""  # the last bytes of the head read so far (the blank line may straddle reads)
    # the limit of the current phase: at `_due` (loop time) `_on_due` runs; None: no limit.
    # One timer per connection checks it, re-armed only when it fires early: a request
    # moves the limit twice without creating or cancelling a timer (one per request cost
    # two call_later and two cancels, measurable on the submit path)
    _due: float | None = None
    _on_due: Any = None
    _timer: asyncio.TimerHandle | None = None
    _timer_at = 0.0
    _refused = False  # answered 408/431: the rest of what arrives is dropped

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are Transports in all but registration
        inner = cast(asyncio.Transport, transport)
        super().connection_made(CoalescingTransport(inner, self.loop))
        self._arm(self.header_timeout_s, self._headers_too_slow)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._in_head:
            self._head_bytes += self._head_part(data)
            if self._head_bytes > self.max_header_bytes:
                self._refuse(431, "the request line and headers exceed 32 KiB")
                return
            if self._due is None:  # the first byte of a request after a keep-alive wait
                self._arm(self.header_timeout_s, self._headers_too_slow)
        super().data_received(data)

    def _head_part(self, data: bytes) -> int:
        """How many bytes of `data` belong to the request line and headers: up to the blank
        line that ends them (it may straddle two reads), not the body read in the same chunk."""
        window = self._tail + data if self._tail else data
        end = window.find(b"\r\n\r\n")
        self._tail = window[-3:]
        return len(data) if end < 0 else max(0, end + 4 - (len(window) - len(data)))

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._arm(self.body_timeout_s, self._body_too_slow)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._disarm()
        self._in_head, self._head_bytes, self._tail = True, 0, b""
        super().on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        super().connection_lost(exc)

    def shutdown(self) -> None:
        """The server is stopping (SIGTERM): first tell the app to end its long-polls
        (`DRAIN` in the lifespan state), so that their answers go out now and the graceful
        stop does not wait for them, nor cancel them mid-query when its timeout runs out."""
        drain = self.app_state.get(DRAIN)
        if callable(drain):
            drain()
        super().shutdown()

    def handle_websocket_upgrade(self) -> None:
        self._stop_timer()  # the WebSocket protocol has its own pings and limits from here on
        if isinstance(self.transport, CoalescingTransport):
            self.transport.flush()
            self.transport = self.transport.inner
        super().handle_websocket_upgrade()

    def _arm(self, seconds: float, action: Any) -> None:
        due = self.loop.time() + seconds
        self._due, self._on_due = due, action
        if self._timer is None or self._timer_at > due:
            self._set_timer(due)

    def _disarm(self) -> None:
        self._due = None  # the timer, if any, finds nothing to do when it fires

    def _set_timer(self, due: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = due
        self._timer = self.loop.call_at(due, self._check_due)

    def _stop_timer(self) -> None:
        self._due = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _check_due(self) -> None:
        self._timer = None
        if self._due is None:
            return
        if self._due > self.loop.time():  # the limit moved since the timer was set
            self._set_timer(self._due)
            return
        action, self._due = self._on_due, None
        action()

    def _headers_too_slow(self) -> None:
        if self.cycle is None or self.cycle.response_complete:  # not inside a request
            self._refuse(408, "the request line and headers did not arrive in time")

    def _body_too_slow(self) -> None:
        log.info(
            "request body not received in time; closing the connection",
            extra={"client": self.client and self.client[0]},
        )
        self.transport.close()

    def _refuse(self, status: int, message: str) -> None:
        """Answer `status` with a plain-text reason and close without parsing anything more.
        The close lingers: the answer goes with a FIN, and what the client is still sending
        is read and dropped for LINGER_S (closing with unread data would reset the connection,
        and the reset could destroy the answer before the client reads it)."""
        self._stop_timer()
        self._refused = True
        body = message.encode("ascii")
        head = (
            b"content-type: text/plain; charset=utf-8\r\ncontent-length: "
            + str(len(body)).encode("ascii")
            + b"\r\nconnection: close\r\n\r\n"
        )
        transport = self.transport
        if transport.is_closing():
            return
        transport.write(STATUS_LINE[status] + head + body)
        if transport.can_write_eof():
            transport.write_eof()
            self.loop.call_later(LINGER_S, transport.close)
        else:
            transport.close()

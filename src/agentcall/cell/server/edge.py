"""The cell's HTTP edge: what a slow or hostile client can hold, and for how long.

uvicorn's httptools protocol bounds nothing but the wait between two requests of one
connection. :func:`bounded_protocol` gives it the cell's limits (:class:`HttpLimits`,
read from the ``CELL_HTTP_*`` settings of ``cell serve``):

- a request's line and headers must arrive within ``header_timeout_s`` of its first byte
  (or of the connection, for a client that connects and sends nothing): else ``408`` and
  the connection is closed;
- they must fit in ``max_header_bytes``: else ``431`` and close, nothing more is read;
- its body must arrive within ``body_timeout_s`` of the end of its headers: else the
  connection is closed;
- an idle keep-alive connection is closed after ``keep_alive_s`` (uvicorn's own timer);
- at most ``max_connections`` connections are open at once (HTTP and WebSocket together):
  one more is answered ``503`` with the reason and closed at once (a burst of refusals is
  logged once a second at most).

A WebSocket (the event stream) is bounded by its pings from its upgrade on.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = logging.getLogger("cell.http")
LINGER_S = 1.0  # after a refusal, what the client still sends is read and dropped this long
REASONS = {
    408: b"Request Timeout",
    431: b"Request Header Fields Too Large",
    503: b"Service Unavailable",
}


@dataclass(frozen=True)
class HttpLimits:
    """The bounds of the cell's HTTP edge (``CELL_HTTP_*``, see docs/cell.md)."""

    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    keep_alive_s: float = 5.0
    max_connections: int = 256  # the D holds at most 32 requests and one event stream
    max_header_bytes: int = 32_768


_refusals = {"said_at": -1e9, "since": 0}


def _say_refused(now: float, limit: int) -> None:
    """One log line per second at most for a burst of refused connections."""
    _refusals["since"] += 1
    if now - _refusals["said_at"] < 1.0:
        return
    log.warning(
        "refused %d connection(s): %d are open, the limit (CELL_HTTP_MAX_CONNECTIONS)",
        _refusals["since"],
        limit,
    )
    _refusals["said_at"], _refusals["since"] = now, 0


def bounded_protocol(limits: HttpLimits) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol with these limits (pass it as ``http=``)."""
    return type("BoundedProtocol", (BoundedHttpToolsProtocol,), {"limits": limits})


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    limits = HttpLimits()
    _in_head = True  # reading a request line and headers (or waiting for the next request)
    _head_bytes = 0
    _tail = b""  # the last bytes of the head read so far (the blank line may straddle reads)
    _timer: asyncio.TimerHandle | None = None
    _refused = False  # answered 408/431/503: what arrives after is dropped

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        if len(self.connections) > self.limits.max_connections:
            _say_refused(self.loop.time(), self.limits.max_connections)
            self._refuse(503, "too many connections to this cell; retry later")
            return
        self._arm(self.limits.header_timeout_s, self._headers_too_slow)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._in_head:
            if self._timer is None:  # the first byte of a request after a keep-alive wait
                self._arm(self.limits.header_timeout_s, self._headers_too_slow)
            self._head_bytes += self._head_part(data)
            if self._head_bytes > self.limits.max_header_bytes:
                self._refuse(431, "the request line and headers are too large")
                return
        super().data_received(data)

    def _head_part(self, data: bytes) -> int:
        """How many bytes of ``data`` belong to the request line and headers: up to the
        blank line that ends them (it may straddle two reads), not the body after it."""
        window = self._tail + data if self._tail else data
        end = window.find(b"\r\n\r\n")
        self._tail = window[-3:]
        return len(data) if end < 0 else max(0, end + 4 - (len(window) - len(data)))

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._arm(self.limits.body_timeout_s, self._body_too_slow)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._disarm()
        self._in_head, self._head_bytes, self._tail = True, 0, b""
        super().on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def handle_websocket_upgrade(self) -> None:
        self._disarm()  # the WebSocket protocol has its own pings from here on
        super().handle_websocket_upgrade()

    def _arm(self, seconds: float, action: Any) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, action)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _headers_too_slow(self) -> None:
        self._timer = None
        if self.cycle is None or self.cycle.response_complete:  # not inside a request
            self._refuse(408, "the request line and headers did not arrive in time")

    def _body_too_slow(self) -> None:
        self._timer = None
        log.info("request body not received in time; closing the connection")
        self.transport.close()

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``status`` with a plain-text reason and close without parsing more. The
        close lingers: the answer goes with a FIN and what the client still sends is read
        and dropped for LINGER_S (closing with unread data would reset the connection, and
        the reset could destroy the answer before the client reads it)."""
        self._disarm()
        self._refused = True
        transport = self.transport
        if transport.is_closing():
            return
        body = message.encode("ascii")
        head = b"HTTP/1.1 %d %s\r\n" % (status, REASONS[status])
        fields = b"content-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
        length = b"content-length: %d\r\n\r\n" % len(body)
        transport.write(head + fields + length + body)
        if transport.can_write_eof():
            transport.write_eof()
            self.loop.call_later(LINGER_S, transport.close)
        else:
            transport.close()

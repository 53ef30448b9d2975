"""What a slow, silent or numerous client can hold of the D's HTTP port.

uvicorn's httptools protocol bounds only the wait between two requests of a connection
(``timeout_keep_alive``); :class:`BoundedProtocol` adds the rest:

- a request's line and headers must arrive within ``header_timeout_s`` of its first byte (or
  of the connection, for a client that connects and sends nothing), and fit in
  ``MAX_HEADER_BYTES``: else 408 / 431 and close;
- its body must arrive within ``body_timeout_s`` of the end of its headers: else close;
- an idle keep-alive connection is closed after ``idle_timeout_s`` (uvicorn's own timer);
- at most ``max_connections`` connections are open. A new one beyond it first pushes out the
  oldest connection that has no request running (one still sending its headers, or idle):
  that one is answered 503 and closed. Only when every connection is running a request is
  the new one refused, with ``503`` and ``Retry-After: 1``. So a probe of ``/readyz`` gets
  in while trickling clients fill the port, and they are cut no later than their timeouts.

The limit is also kept under half the process's open-file limit (``RLIMIT_NOFILE``), so that
a full port never leaves the D without descriptors for its database, broker and cell.

Refusals and cuts are reported once per burst, not per connection: ``report`` gets
``http.edge_refusing`` at the first one, and ``http.edge_quiet`` with the counts by reason
once ``QUIET_S`` pass without any; :attr:`Edge.totals` counts them since start (``GET
/metrics``: ``dispatcher_http_refused_connections_total{reason}``).
"""

from __future__ import annotations

import asyncio
import logging
import resource
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

MAX_HEADER_BYTES = 32_768
LINGER_S = 0.5  # after a refusal, what the client still sends is read and dropped this long
MAX_LINGERING = 64  # refusals lingering at once; beyond, a refused connection closes at once
QUIET_S = 10.0
Report = Callable[[int, str, Mapping[str, Any]], None]  # (logging level, event, facts)


@dataclass(frozen=True)
class EdgeLimits:
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    idle_timeout_s: int = 5  # whole seconds (uvicorn's keep-alive timer)
    max_connections: int = 100


def connection_limit(configured: int, open_files: int) -> int:
    """The limit kept: ``configured``, lowered to half the open-file limit when that is
    smaller (``open_files`` <= 0: unlimited)."""
    if open_files <= 0:
        return configured
    return max(1, min(configured, open_files // 2))


def open_file_limit() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return -1 if soft == resource.RLIM_INFINITY else soft


def _ignore(level: int, event: str, facts: Mapping[str, Any]) -> None:
    """The default ``report``: the assembly passes one that logs."""


@dataclass
class Edge:
    """What the connections of one server share: the limits, the open connections in the
    order they came (oldest first), and the current burst of refusals."""

    limits: EdgeLimits
    max_connections: int
    report: Report = _ignore
    open: dict[BoundedProtocol, None] = field(default_factory=dict)
    lingering: int = 0
    burst: dict[str, int] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    last_refusal: float = 0.0
    _quiet_check: asyncio.TimerHandle | None = None

    def refused(self, reason: str, loop: asyncio.AbstractEventLoop) -> None:
        if not self.burst:
            self.report(
                logging.WARNING,
                "http.edge_refusing",
                {"reason": reason, "open": len(self.open), "limit": self.max_connections},
            )
            self._quiet_check = loop.call_later(QUIET_S, self._check_quiet, loop)
        self.burst[reason] = self.burst.get(reason, 0) + 1
        self.totals[reason] = self.totals.get(reason, 0) + 1
        self.last_refusal = loop.time()

    def _check_quiet(self, loop: asyncio.AbstractEventLoop) -> None:
        left = self.last_refusal + QUIET_S - loop.time()
        if left > 0:
            self._quiet_check = loop.call_later(left, self._check_quiet, loop)
            return
        counts, self.burst, self._quiet_check = self.burst, {}, None
        self.report(logging.INFO, "http.edge_quiet", {"refused": counts, "open": len(self.open)})

    def evictable(self) -> BoundedProtocol | None:
        """The oldest connection without a request running."""
        for conn in self.open:
            if conn.between_requests():
                return conn
        return None


class BoundedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the limits of :data:`edge` (set by
    :func:`protocol_for`: one subclass per server)."""

    edge: Edge
    _in_head = True
    _head_bytes = 0
    _tail = b""
    _timer: asyncio.TimerHandle | None = None
    _refused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(cast(asyncio.Transport, transport))
        edge = self.edge
        if len(edge.open) >= edge.max_connections:
            victim = edge.evictable()
            if victim is None:
                self._refuse(503, "the D's HTTP port is at its connection limit", "limit")
                return
            victim._refuse(503, "the D's HTTP port is at its connection limit", "evicted")
        edge.open[self] = None
        self._arm(edge.limits.header_timeout_s, self._headers_too_slow)

    def between_requests(self) -> bool:
        return not self._refused and (self.cycle is None or self.cycle.response_complete)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._in_head:
            self._head_bytes += self._head_part(data)
            if self._head_bytes > MAX_HEADER_BYTES:
                self._refuse(431, "the request line and headers exceed 32 KiB", "too_large")
                return
            if self._timer is None:  # the first byte of a request after a keep-alive wait
                self._arm(self.edge.limits.header_timeout_s, self._headers_too_slow)
        super().data_received(data)

    def _head_part(self, data: bytes) -> int:
        """How many bytes of ``data`` belong to the request line and headers: up to the
        blank line that ends them (it may straddle two reads)."""
        window = self._tail + data if self._tail else data
        end = window.find(b"\r\n\r\n")
        self._tail = window[-3:]
        return len(data) if end < 0 else max(0, end + 4 - (len(window) - len(data)))

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._arm(self.edge.limits.body_timeout_s, self._body_too_slow)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._disarm()
        self._in_head, self._head_bytes, self._tail = True, 0, b""
        super().on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.edge.open.pop(self, None)
        super().connection_lost(exc)

    def _arm(self, seconds: float, action: Callable[[], None]) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, action)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _headers_too_slow(self) -> None:
        self._timer = None
        if self.between_requests():
            self._refuse(408, "the request line and headers did not arrive in time", "headers")

    def _body_too_slow(self) -> None:
        self._timer = None
        self.edge.refused("body", self.loop)
        self.transport.close()

    def _refuse(self, status: int, message: str, reason: str) -> None:
        """Answer ``status`` with a plain-text reason and close without parsing anything
        more. The close lingers (the answer goes with a FIN, and what the client still sends
        is dropped), so that the client reads the answer instead of a reset."""
        self._disarm()
        self._refused = True
        self.edge.open.pop(self, None)
        self.edge.refused(reason, self.loop)
        transport = self.transport
        if transport.is_closing():
            return
        body = message.encode("ascii")
        retry = b"retry-after: 1\r\n" if status == 503 else b""
        head = b"content-type: text/plain; charset=utf-8\r\ncontent-length: %d\r\n" % len(body)
        transport.write(STATUS_LINE[status] + head + retry + b"connection: close\r\n\r\n" + body)
        if self.edge.lingering < MAX_LINGERING and transport.can_write_eof():
            transport.write_eof()
            self.edge.lingering += 1
            self.loop.call_later(LINGER_S, self._linger_over, transport)
        else:
            transport.close()

    def _linger_over(self, transport: asyncio.Transport) -> None:
        self.edge.lingering -= 1
        transport.close()


def protocol_for(edge: Edge) -> type[BoundedProtocol]:
    """A protocol class for uvicorn's ``http=`` bound to ``edge``."""
    return type("DispatcherHttpProtocol", (BoundedProtocol,), {"edge": edge})

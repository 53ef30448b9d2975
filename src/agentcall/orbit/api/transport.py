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
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


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
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are Transports in all but registration
        inner = cast(asyncio.Transport, transport)
        super().connection_made(CoalescingTransport(inner, self.loop))

    def handle_websocket_upgrade(self) -> None:
        if isinstance(self.transport, CoalescingTransport):
            self.transport.flush()
            self.transport = self.transport.inner
        super().handle_websocket_upgrade()

"""SIP transports of the cell: one UDP socket, or one TCP connection per trunk.

Both deliver every parsed message to the handler registered for its Call-ID;
messages for unknown calls are answered (481) or dropped by the endpoint owner.
Malformed datagrams are logged (without their content) and dropped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from agentcall.cell.domain.errors import SipError, SipParseError, SipTransportError
from agentcall.cell.sip.message import SipMessage, parse_message, serialize, split_stream

log = logging.getLogger("cell.sip.transport")

Address = tuple[str, int]
Handler = Callable[[SipMessage, Address], None]


@dataclass
class Dispatcher:
    """Routes incoming messages to the call that owns their Call-ID."""

    handlers: dict[str, Handler] = field(default_factory=dict)
    stray: Handler | None = None
    dropped: int = 0

    def deliver(self, data: bytes, addr: Address) -> None:
        try:
            message = parse_message(data)
            handler = self.handlers.get(message.call_id, self.stray)
        except SipParseError as exc:
            self.dropped += 1
            log.warning("dropped a malformed SIP message from %s:%s: %s", *addr[:2], exc)
            return
        if handler is not None:
            handler(message, addr)


class _UdpProtocol(asyncio.DatagramProtocol):
    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher

    def datagram_received(self, data: bytes, addr: tuple[str | object, int]) -> None:
        self.dispatcher.deliver(data, (str(addr[0]), int(addr[1])))

    def error_received(self, exc: Exception) -> None:  # ICMP unreachable etc.
        log.warning("SIP UDP socket error: %s", exc)


class _TcpProtocol(asyncio.Protocol):
    def __init__(self, dispatcher: Dispatcher, peer: Address) -> None:
        self.dispatcher = dispatcher
        self.peer = peer
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        self.closed = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        try:
            messages, self.buffer = split_stream(self.buffer + data)
        except SipParseError as exc:
            log.warning("closing SIP TCP stream from %s:%s: %s", *self.peer, exc)
            if self.transport is not None:
                self.transport.close()
            return
        for raw in messages:
            self.dispatcher.deliver(raw, self.peer)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


class SipEndpoint:
    """The cell's SIP socket(s). ``transport`` is ``udp`` or ``tcp``."""

    def __init__(
        self,
        transport: str,
        local_host: str = "127.0.0.1",
        local_port: int = 0,
        advertised_host: str | None = None,
    ) -> None:
        if transport not in ("udp", "tcp"):
            raise SipError(f"transport {transport!r} is not supported (udp or tcp)")
        self.transport = transport
        self.local_host = local_host
        self.local_port = local_port
        self.advertised_host = advertised_host
        self.dispatcher = Dispatcher()
        self._udp: asyncio.DatagramTransport | None = None
        self._tcp: dict[Address, _TcpProtocol] = {}
        self._connecting: dict[Address, asyncio.Lock] = {}

    @property
    def reliable(self) -> bool:
        return self.transport == "tcp"

    async def start(self) -> None:
        if self.transport == "udp":
            loop = asyncio.get_running_loop()
            transport, _ = await loop.create_datagram_endpoint(
                lambda: _UdpProtocol(self.dispatcher), local_addr=(self.local_host, self.local_port)
            )
            self._udp = transport
            self.local_port = int(transport.get_extra_info("sockname")[1])

    @property
    def public_host(self) -> str:
        """The address written in Via, Contact and SDP (set it when behind NAT)."""
        return self.advertised_host or self.local_host

    async def prepare(self, addr: Address) -> None:
        """Open the TCP connection to ``addr`` now, so Via/Contact know the local port."""
        if self.transport == "tcp":
            await self._connection(addr)

    def register(self, call_id: str, handler: Handler) -> None:
        self.dispatcher.handlers[call_id] = handler

    def unregister(self, call_id: str) -> None:
        self.dispatcher.handlers.pop(call_id, None)

    async def send(self, message: SipMessage, addr: Address) -> None:
        data = serialize(message)
        if self._udp is not None:
            self._udp.sendto(data, addr)
            return
        protocol = await self._connection(addr)
        if protocol.transport is None or protocol.transport.is_closing():
            raise SipTransportError(f"SIP TCP connection to {addr[0]}:{addr[1]} is closed")
        protocol.transport.write(data)

    async def _connection(self, addr: Address) -> _TcpProtocol:
        lock = self._connecting.setdefault(addr, asyncio.Lock())
        async with lock:
            current = self._tcp.get(addr)
            if current is not None and not current.closed.done():
                return current
            loop = asyncio.get_running_loop()
            try:
                _, protocol = await loop.create_connection(
                    lambda: _TcpProtocol(self.dispatcher, addr), addr[0], addr[1]
                )
            except OSError as exc:
                raise SipTransportError(f"cannot connect to {addr[0]}:{addr[1]}: {exc}") from exc
            if protocol.transport is not None:
                sock = protocol.transport.get_extra_info("sockname")
                self.local_port = int(sock[1])
            self._tcp[addr] = protocol
            return protocol

    async def close(self) -> None:
        if self._udp is not None:
            self._udp.close()
        for protocol in self._tcp.values():
            if protocol.transport is not None:
                protocol.transport.close()
        self._tcp.clear()

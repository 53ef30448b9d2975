"""Cross-process wake-ups (docs/orbit/scaling.md, orbit.domain.peers): this process's
registration and its heartbeat, a UDP socket that hears other processes' hints, and the
sender that tells them, once per event loop turn, which queues got ready work here.

A hint is an optimisation only: a lost or late one costs at most the dispatcher's periodic
full round, which stays the safety net; a hostile datagram is ignored (and counted)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.peers import HEARTBEAT_S, decode, forgotten, live_peers, plan_sends
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.servers import Also, Servers

log = logging.getLogger("orbit.peers")
RETRY_PAUSE_S = 0.2


@dataclass(frozen=True, slots=True)
class PeerCounters:
    """Metric hooks: hints sent (datagrams), heard (valid ones), ignored (invalid ones), and
    failed registration rounds."""

    sent: Callable[[int], None] = lambda n: None
    heard: Callable[[], None] = lambda: None
    ignored: Callable[[], None] = lambda: None
    failed: Callable[[], None] = lambda: None


class _Receiver(asyncio.DatagramProtocol):
    def __init__(self, peers: PeerHints) -> None:
        self.peers = peers

    def datagram_received(self, data: bytes, addr: Any) -> None:
        queue_ids = decode(data)
        if queue_ids:
            self.peers.counters.heard()
            self.peers.on_hint(queue_ids)
        else:
            self.peers.counters.ignored()

    def error_received(self, exc: Exception) -> None:  # e.g. ICMP port unreachable
        log.debug("hint socket error: %s", exc)


class PeerHints:
    """`on_hint(queue_ids)`: another process says these queues have ready work (the hub's
    local wake-up). `bind_host`/`bind_port` (0: any free port) is where hints are heard;
    `advertise_host` what the others are told (default: `bind_host`)."""

    def __init__(
        self,
        db: Database,
        on_hint: Callable[[tuple[str, ...]], None],
        *,
        bind_host: str = "127.0.0.1",
        bind_port: int = 0,
        advertise_host: str = "",
        counters: PeerCounters | None = None,
    ) -> None:
        self.server_id = new_id()
        self.on_hint = on_hint
        self.bind = (bind_host, bind_port)
        self.advertise_host = advertise_host or bind_host
        self.counters = counters or PeerCounters()
        self.servers = Servers(db, self.server_id, self.advertise_host, bind_port)
        self.also: Also | None = None  # more writes of each round (this process's workers)
        self.peers: tuple[tuple[str, int], ...] = ()
        self._pending: set[str] = set()  # to send at the end of this loop turn
        self._scheduled = False  # a loop turn with hints is open (its end is scheduled)
        self._transport: asyncio.DatagramTransport | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            transport, _ = await loop.create_datagram_endpoint(lambda: _Receiver(self),
                                                               local_addr=self.bind)  # fmt: skip
        except OSError as exc:  # e.g. a fixed port and `--workers N`: one process gets it
            log.warning("hint port %s:%s unavailable (%s); using a free port instead",
                        *self.bind, exc.strerror)  # fmt: skip
            transport, _ = await loop.create_datagram_endpoint(
                lambda: _Receiver(self), local_addr=(self.bind[0], 0))
        self._transport = transport
        self.servers.port = int(transport.get_extra_info("sockname")[1])
        with contextlib.suppress(Exception):  # the loop retries; the server starts anyway
            await self._round()
        self._task = asyncio.create_task(self._beat_forever(), name="orbit-peers")
        log.info("hints heard", extra={"server_id": self.server_id,
                                       "address": f"{self.advertise_host}:{self.servers.port}"})

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._transport is not None:
            self._transport.close()
        try:
            await self.servers.forget([self.server_id])
        except Exception:  # noqa: BLE001 - the row expires by its heartbeat anyway
            log.warning("could not delete this server's registration; it expires")

    # ----------------------------------------------------------------- sending
    def announce(self, queue_ids: tuple[str, ...]) -> None:
        """Work became ready in `queue_ids` here: tell the live peers. The first announce of a
        loop turn is sent at once (an idle peer's worker waits for it); the queues named later
        in the same turn go at the end of the turn, all in one datagram per peer (their work
        may have committed after the first datagram left). A busy turn costs at most two
        datagrams per peer."""
        if not self.peers or not queue_ids:
            return
        if self._scheduled:
            self._pending.update(queue_ids)
            return
        self._scheduled = True
        asyncio.get_running_loop().call_soon(self._turn_end)
        self._send(sorted(set(queue_ids)))

    def _turn_end(self) -> None:
        self._scheduled = False
        pending, self._pending = sorted(self._pending), set()
        if pending:
            self._send(pending)

    def _send(self, queue_ids: list[str]) -> None:
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        sends = plan_sends(queue_ids, self.peers)
        for datagram, address in sends:
            try:
                transport.sendto(datagram, address)
            except OSError as exc:  # a bad advertised address: that peer misses hints
                log.warning("hint not sent to %s:%s: %s", *address, exc)
        self.counters.sent(len(sends))

    # ----------------------------------------------------------------- registration
    async def _beat_forever(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            try:
                await self._round()
            except asyncio.CancelledError:
                raise
            except Exception:
                self.counters.failed()
                log.exception("server registration round failed; retrying")
                await asyncio.sleep(RETRY_PAUSE_S)

    async def _round(self) -> None:
        now, rows = await self.servers.beat(self.also)
        self.peers = live_peers(rows, self.server_id, now)
        await self.servers.forget(forgotten(rows, now))

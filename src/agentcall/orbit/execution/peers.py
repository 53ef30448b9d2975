"""Cross-process wake-ups (docs/orbit/scaling.md, agentcall.orbit.domain.peers): this process's
registration and its heartbeat, a UDP socket that hears other processes' datagrams (hints,
offers, claims), and the sender (`HintSender`) that tells them, once per event loop turn,
which queues got ready work here, which queues this process offers idle slots on, and which
of their offers a submit here claimed (remote eager dispatch, `agentcall.orbit.execution.offers`).

A hint is an optimisation only: a lost or late one costs at most the dispatcher's periodic
full round, which stays the safety net; a hostile datagram is ignored (and counted)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from agentcall.orbit.domain.peers import (
    HEARTBEAT_S,
    OFFER_MAGIC,
    Claimed,
    Hint,
    Offered,
    dead_servers,
    decode_message,
    encode_claim,
    forgotten,
    live_addresses,
    plan_sends,
)
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


@dataclass(frozen=True, slots=True)
class Listener:
    """What the datagrams of the other processes do here: `hint(queue_ids)` (ready work: the
    hub's local wake-up), `offered(queue_ids)` (they offer idle slots on these queues),
    `claimed(offer_id)` (a submit there claimed an offer of this process)."""

    hint: Callable[[tuple[str, ...]], None]
    offered: Callable[[Sequence[str]], None] = lambda queue_ids: None
    claimed: Callable[[str], None] = lambda offer_id: None


class _Receiver(asyncio.DatagramProtocol):
    def __init__(self, listener: Listener, counters: PeerCounters) -> None:
        self.listener = listener
        self.counters = counters

    def datagram_received(self, data: bytes, addr: Any) -> None:
        message = decode_message(data)
        if message is None:
            self.counters.ignored()
            return
        self.counters.heard()
        if isinstance(message, Hint):
            self.listener.hint(message.queue_ids)
        elif isinstance(message, Offered):
            self.listener.offered(message.queue_ids)
        elif isinstance(message, Claimed):
            self.listener.claimed(message.offer_id)

    def error_received(self, exc: Exception) -> None:  # e.g. ICMP port unreachable
        log.debug("hint socket error: %s", exc)


class HintSender:
    """The sending half of the hint socket: the live peers' addresses (renewed by each
    registration round of `PeerHints`) and what is sent to them."""

    def __init__(self, counters: PeerCounters | None = None) -> None:
        self.counters = counters or PeerCounters()
        self.peers: tuple[tuple[str, int], ...] = ()
        self.addresses: dict[str, tuple[str, int]] = {}  # live peers by server id
        self.dead: frozenset[str] = frozenset()  # registrations that expired
        self.transport: asyncio.DatagramTransport | None = None
        self._pending: set[str] = set()  # to send at the end of this loop turn
        self._scheduled = False  # a loop turn with hints is open (its end is scheduled)

    def live(self) -> Collection[str]:
        """The server ids of the live other processes."""
        return self.addresses.keys()

    def gone(self) -> Collection[str]:
        """The server ids of processes whose registration expired."""
        return self.dead

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
        self._send(plan_sends(sorted(set(queue_ids)), self.peers))

    def offered(self, queue_ids: Sequence[str]) -> None:
        """Idle slots here are offered on these queues: tell the live peers."""
        if self.peers and queue_ids:
            self._send(plan_sends(sorted(set(queue_ids)), self.peers, OFFER_MAGIC))

    def claim(self, server_id: str, offer_id: str, task_id: str) -> None:
        """A submit here claimed `offer_id` of `server_id` for `task_id`: tell that process
        (if it is not known live here, its own periodic round finds the claim)."""
        address = self.addresses.get(server_id)
        if address is not None:
            self._send([(encode_claim(offer_id, task_id), address)])

    def _turn_end(self) -> None:
        self._scheduled = False
        pending, self._pending = sorted(self._pending), set()
        if pending:
            self._send(plan_sends(pending, self.peers))

    def _send(self, sends: list[tuple[bytes, tuple[str, int]]]) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        for datagram, address in sends:
            try:
                transport.sendto(datagram, address)
            except OSError as exc:  # a bad advertised address: that peer misses hints
                log.warning("hint not sent to %s:%s: %s", *address, exc)
        self.counters.sent(len(sends))


class PeerHints:
    """This process's registration (`server_id`) and its hint socket: `bind_host`/`bind_port`
    (0: any free port) is where datagrams are heard, `advertise_host` what the others are told
    (default: `bind_host`); `sender` sends through that socket. Each registration round also
    runs `also` in its transaction (this process's workers,
    `agentcall.orbit.execution.worker_directory`) and repeats `offered()`, the queues this process
    offers idle slots on."""

    def __init__(
        self,
        db: Database,
        server_id: str,
        sender: HintSender,
        listener: Listener,
        *,
        bind_host: str = "127.0.0.1",
        bind_port: int = 0,
        advertise_host: str = "",
        also: Also | None = None,
        offered: Callable[[], Collection[str]] = lambda: (),
    ) -> None:
        self.server_id = server_id
        self.sender = sender
        self.listener = listener
        self.counters = sender.counters
        self.bind = (bind_host, bind_port)
        self.advertise_host = advertise_host or bind_host
        self.servers = Servers(db, self.server_id, self.advertise_host, bind_port)
        self.also = also
        self.offered = offered
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        receiver = lambda: _Receiver(self.listener, self.counters)  # noqa: E731
        try:
            transport, _ = await loop.create_datagram_endpoint(receiver, local_addr=self.bind)
        except OSError as exc:  # e.g. a fixed port and `--workers N`: one process gets it
            log.warning(
                "hint port %s:%s unavailable (%s); using a free port instead",
                *self.bind,
                exc.strerror,
            )
            transport, _ = await loop.create_datagram_endpoint(
                receiver, local_addr=(self.bind[0], 0)
            )
        self.sender.transport = transport
        self.servers.port = int(transport.get_extra_info("sockname")[1])
        with contextlib.suppress(Exception):  # the loop retries; the server starts anyway
            await self._round()
        self._task = asyncio.create_task(self._beat_forever(), name="orbit-peers")
        log.info(
            "hints heard",
            extra={
                "server_id": self.server_id,
                "address": f"{self.advertise_host}:{self.servers.port}",
            },
        )

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.sender.transport is not None:
            self.sender.transport.close()
        try:
            await self.servers.forget([self.server_id])
        except Exception:  # noqa: BLE001 - the row expires by its heartbeat anyway
            log.warning("could not delete this server's registration; it expires")

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
        self.sender.addresses = live_addresses(rows, self.server_id, now)
        self.sender.dead = dead_servers(rows, now)
        self.sender.peers = tuple(sorted(set(self.sender.addresses.values())))
        await self.servers.forget(forgotten(rows, now))
        self.sender.offered(sorted(self.offered()))

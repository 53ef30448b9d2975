"""The AMQP connection, kept up by one supervised loop with the D's reconnect policy.

A lost, refused or stalled connection (the handshake bounded by ``connect_timeout_s``) is
tried again after :data:`~agentcall.dispatcher.domain.reconnect.AMQP_LINK`'s delay for the
failures in a row (capped, jittered); one connection that came up resets the count.
The link is not aio-pika's robust connection on purpose: that one reopens channels and
consumers by itself, while the D decides which task queues it consumes (the reconcile after
``on_up``) and must see every loss (``on_down``) to forget the deliveries it holds.

On every (re)connection the link opens a fresh publisher channel with publisher
confirms and calls the registered ``on_up`` hooks; when the connection drops it calls
``on_down`` hooks (consumers forget their channels; the broker requeues every
unacknowledged delivery, and inbox dedupe makes redelivery harmless, D-CMD-1).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import aio_pika
from aio_pika.abc import AbstractChannel

from agentcall.dispatcher.domain.reconnect import AMQP_LINK, ReconnectPolicy
from agentcall.dispatcher.logs import log

LOG = logging.getLogger("dispatcher.mq")
Hook = Callable[[], Awaitable[None]]


@dataclass(frozen=True)
class LinkStatus:
    connected: bool
    connections: int
    last_error: str | None


class AmqpLink:
    def __init__(
        self,
        url: str,
        *,
        policy: ReconnectPolicy = AMQP_LINK,
        jitter: Callable[[], float] = random.random,
        connect_timeout_s: float = 10.0,
    ) -> None:
        self._url = url
        self._policy, self._jitter = policy, jitter
        self._connect_timeout = connect_timeout_s
        self.failures = 0  # failed connections in a row; 0 once one came up
        self.connection: aio_pika.abc.AbstractConnection | None = None
        self.publisher: AbstractChannel | None = None
        self.connected = asyncio.Event()
        self.last_error: str | None = None
        self.reconnects = 0
        self._on_up: list[Hook] = []
        self._on_down: list[Hook] = []

    def status(self) -> LinkStatus:
        return LinkStatus(self.connected.is_set(), self.reconnects, self.last_error)

    def on_up(self, hook: Hook) -> None:
        self._on_up.append(hook)

    def on_down(self, hook: Hook) -> None:
        self._on_down.append(hook)

    async def publisher_channel(self) -> AbstractChannel | None:
        """The confirm channel, reopened if the broker closed it (e.g. a missing exchange)."""
        connection = self.connection
        if connection is None or connection.is_closed:
            return None
        if self.publisher is None or self.publisher.is_closed:
            self.publisher = await connection.channel(
                publisher_confirms=True, on_return_raises=True
            )
            log(LOG, logging.WARNING, "amqp.publisher_reopened")
        return self.publisher

    async def channel(self) -> AbstractChannel:
        if self.connection is None or self.connection.is_closed:
            raise ConnectionError("AMQP connection is down")
        return await self.connection.channel(publisher_confirms=False)

    async def run(self) -> None:
        while True:
            closed = asyncio.Event()
            try:
                await self._connect(closed)
                await closed.wait()
                self.last_error = "connection closed"
            except (TimeoutError, aio_pika.exceptions.AMQPException, OSError) as exc:
                self.last_error = f"{type(exc).__name__}: {exc}"[:300]
            await self._down()
            self.failures += 1  # counted from 0 again by every connection that came up
            delay = self._policy.delay(self.failures, self._jitter())
            log(LOG, logging.WARNING, "amqp.down", error=self.last_error, retry_s=round(delay, 3))
            await asyncio.sleep(delay)

    async def _connect(self, closed: asyncio.Event) -> None:
        connection = await aio_pika.connect(self._url, timeout=self._connect_timeout)
        connection.close_callbacks.add(lambda *_: closed.set())
        self.connection = connection
        self.publisher = await connection.channel(publisher_confirms=True, on_return_raises=True)
        self.connected.set()
        self.failures = 0
        self.reconnects += 1
        log(LOG, logging.INFO, "amqp.up", connections=self.reconnects)
        for hook in self._on_up:
            await hook()

    async def _down(self) -> None:
        self.connected.clear()
        connection, self.connection, self.publisher = self.connection, None, None
        for hook in self._on_down:
            await hook()
        if connection is not None and not connection.is_closed:
            await connection.close()

    async def close(self) -> None:
        await self._down()

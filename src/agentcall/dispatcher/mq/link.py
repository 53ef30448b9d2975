"""The AMQP connection, kept up by one supervised loop with back-off.

On every (re)connection the link opens a fresh publisher channel with publisher
confirms and calls the registered ``on_up`` hooks; when the connection drops it calls
``on_down`` hooks (consumers forget their channels; the broker requeues every
unacknowledged delivery, and inbox dedupe makes redelivery harmless, D-CMD-1).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import aio_pika
from aio_pika.abc import AbstractChannel

from agentcall.dispatcher.logs import log

LOG = logging.getLogger("dispatcher.mq")
Hook = Callable[[], Awaitable[None]]


@dataclass(frozen=True)
class LinkStatus:
    connected: bool
    connections: int
    last_error: str | None


class AmqpLink:
    def __init__(self, url: str, *, retry_s: float = 1.0) -> None:
        self._url = url
        self._retry = retry_s
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
            log(LOG, logging.WARNING, "amqp.down", error=self.last_error, retry_s=self._retry)
            await asyncio.sleep(self._retry)

    async def _connect(self, closed: asyncio.Event) -> None:
        connection = await aio_pika.connect(self._url, timeout=10)
        connection.close_callbacks.add(lambda *_: closed.set())
        self.connection = connection
        self.publisher = await connection.channel(publisher_confirms=True, on_return_raises=True)
        self.connected.set()
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

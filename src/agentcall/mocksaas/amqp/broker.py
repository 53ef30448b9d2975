"""Topology owner and confirmed publisher (D-MQ-1..3).

Declarations use a small pool of channels (AMQP RPCs are serial per channel), each
reopened after a refusal (a refused declare closes its channel);
publishing uses one long-lived channel with publisher confirms, every message
persistent + mandatory, a return or a nack reported as an error for the outbox to retry.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import aio_pika
import aiormq
from aio_pika.abc import AbstractChannel, AbstractRobustConnection

from agentcall.mocksaas.errors import BrokerError
from agentcall.mocksaas.store.outbox import OutgoingMessage
from agentcall.mocksaas.topology import Declarations

log = logging.getLogger("mocksaas.amqp")
CONFIRM_TIMEOUT_S = 10.0
CHANNEL_TIMEOUT_S = 5.0
DECLARE_CHANNELS = 4
# What a lost or refusing broker raises (aiormq errors, closed channels, sockets, timeouts).
LINK_ERRORS = (aiormq.exceptions.AMQPError, RuntimeError, OSError, TimeoutError, BrokerError)


class Broker:
    def __init__(self, url: str) -> None:
        self.url = url
        self._conn: AbstractRobustConnection | None = None
        self._pub: AbstractChannel | None = None
        self._decl_pool: asyncio.Queue[AbstractChannel | None] = asyncio.Queue()
        for _ in range(DECLARE_CHANNELS):
            self._decl_pool.put_nowait(None)
        self._pub_lock = asyncio.Lock()

    async def connect(self) -> None:
        try:
            self._conn = await aio_pika.connect_robust(
                self.url, client_properties={"connection_name": "mocksaas"}
            )
        except (OSError, aiormq.exceptions.AMQPError) as exc:
            raise BrokerError(f"cannot connect to {_redact(self.url)}: {exc}") from exc

    @property
    def connection(self) -> AbstractRobustConnection:
        if self._conn is None:
            raise BrokerError("broker not connected")
        return self._conn

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    @asynccontextmanager
    async def _declaring(self) -> AsyncIterator[AbstractChannel]:
        """A declaration channel from the pool (reopened when a refusal closed it)."""
        channel = await self._decl_pool.get()
        try:
            if channel is None or channel.is_closed:
                opening = self.connection.channel(publisher_confirms=False)
                channel = await asyncio.wait_for(opening, CHANNEL_TIMEOUT_S)
            yield channel
        finally:
            self._decl_pool.put_nowait(channel)

    async def declare(self, decl: Declarations) -> None:
        """Declare exchanges, then queues, then bindings (idempotent, exact arguments)."""
        try:
            async with self._declaring() as ch:
                for e in decl.exchanges:
                    await ch.declare_exchange(
                        e.name,
                        aio_pika.ExchangeType(e.type),
                        durable=e.durable,
                        auto_delete=e.auto_delete,
                        internal=e.internal,
                    )
                for q in decl.queues:
                    await ch.declare_queue(
                        q.name,
                        durable=q.durable,
                        exclusive=q.exclusive,
                        auto_delete=q.auto_delete,
                        arguments=q.arguments,
                    )
                for b in decl.bindings:
                    queue = await ch.get_queue(b.queue, ensure=False)
                    await queue.bind(b.exchange, routing_key=b.routing_key)
        except LINK_ERRORS as exc:
            raise BrokerError(f"declare failed: {type(exc).__name__}: {exc}") from exc

    async def retire(self, decl: Declarations) -> None:
        """Unbind the task queue, then delete it (after the D's stopped/applied receipt)."""
        try:
            async with self._declaring() as ch:
                for b in decl.bindings:
                    queue = await ch.get_queue(b.queue, ensure=False)
                    await queue.unbind(b.exchange, routing_key=b.routing_key)
                for q in decl.queues:
                    await ch.queue_delete(q.name)
        except LINK_ERRORS as exc:
            raise BrokerError(f"retire failed: {type(exc).__name__}: {exc}") from exc

    async def delete_queues(self, names: Sequence[str]) -> None:
        """Delete queues (admin purge, failed creation); missing ones are fine."""
        for name in names:
            try:
                async with self._declaring() as ch:
                    await ch.queue_delete(name)
            except aiormq.exceptions.ChannelNotFoundEntity:
                continue
            except LINK_ERRORS as exc:
                raise BrokerError(f"delete {name} failed: {type(exc).__name__}: {exc}") from exc

    async def _channel(self) -> AbstractChannel:
        if self._pub is None or self._pub.is_closed:
            opening = self.connection.channel(publisher_confirms=True, on_return_raises=True)
            self._pub = await asyncio.wait_for(opening, CHANNEL_TIMEOUT_S)
        return self._pub

    async def publish(
        self, messages: Sequence[OutgoingMessage], batch: int = 64
    ) -> list[str | None]:
        """Publish in order; per message ``None`` (confirmed, routed) or the error text.

        Never raises for the broker's sake: while it is unreachable every message gets
        its error and stays pending in the outbox."""
        async with self._pub_lock:
            outcomes: list[str | None] = []
            for start in range(0, len(messages), batch):
                chunk = messages[start : start + batch]
                try:
                    channel = await self._channel()
                except LINK_ERRORS as exc:
                    error = f"no publisher channel: {type(exc).__name__}: {exc}"[:300]
                    return outcomes + [error] * (len(messages) - start)
                outcomes.extend(await asyncio.gather(*(self._one(channel, m) for m in chunk)))
            return outcomes

    async def _one(self, channel: AbstractChannel, m: OutgoingMessage) -> str | None:
        message = aio_pika.Message(
            m.body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT, content_type="application/json"
        )
        try:
            exchange = await channel.get_exchange(m.exchange, ensure=False)
            confirmation: Any = await exchange.publish(
                message, routing_key=m.routing_key, mandatory=True, timeout=CONFIRM_TIMEOUT_S
            )
        except aio_pika.exceptions.DeliveryError as exc:
            return f"returned or nacked: {exc.frame!r}"[:300]
        except LINK_ERRORS as exc:
            return f"publish failed: {type(exc).__name__}: {exc}"[:300]
        if isinstance(confirmation, aiormq.spec.Basic.Ack):
            return None
        return f"not confirmed: {type(confirmation).__name__}"


def _redact(url: str) -> str:
    if "@" not in url:
        return url
    scheme, rest = url.split("://", 1) if "://" in url else ("", url)
    return f"{scheme}://***@{rest.split('@', 1)[1]}"

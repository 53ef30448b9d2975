"""Observing and bending the SaaS-owned topology from a test, as the SaaS operator could."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import aio_pika
import aiormq

from tests.support.services import amqp_url

T = TypeVar("T")
RESULT_EXCHANGE = "agent-call.saas.v3"
DEAD_LETTER_QUEUE = "agent-call.dead-letter.v3"


def _run(action: Callable[[aio_pika.abc.AbstractConnection], Awaitable[T]]) -> T:
    async def main() -> T:
        connection = await aio_pika.connect(amqp_url())
        async with connection:
            return await action(connection)

    return asyncio.run(main())


def message_count(queue: str) -> int | None:
    """Ready messages in ``queue`` (passive declare); None when it does not exist."""

    async def count(connection: aio_pika.abc.AbstractConnection) -> int | None:
        channel = await connection.channel()
        try:
            declared = await channel.declare_queue(queue, passive=True)
            return int(declared.declaration_result.message_count or 0)
        except aiormq.exceptions.ChannelNotFoundEntity:
            return None

    return _run(count)


def result_binding(dispatcher_id: str, bound: bool) -> None:
    """Unbind / rebind the SaaS result queue of ``dispatcher_id`` (makes results unroutable)."""

    async def change(connection: aio_pika.abc.AbstractConnection) -> None:
        channel = await connection.channel()
        queue = await channel.declare_queue(f"agent-call.saas.d.{dispatcher_id}.v3", passive=True)
        route = f"d.{dispatcher_id}.out"
        if bound:
            await queue.bind(RESULT_EXCHANGE, route)
        else:
            await queue.unbind(RESULT_EXCHANGE, route)

    _run(change)


def take_dead_letters(marker: str) -> list[bytes]:
    """Remove and return the dead letters whose body contains ``marker``; keep the others."""

    async def take(connection: aio_pika.abc.AbstractConnection) -> list[bytes]:
        channel = await connection.channel()
        queue = await channel.declare_queue(DEAD_LETTER_QUEUE, passive=True)
        found: list[bytes] = []
        while (message := await queue.get(no_ack=False, fail=False, timeout=5)) is not None:
            if marker.encode() in message.body:
                await message.ack()
                found.append(message.body)
        await channel.close()  # every other dead letter goes back to the queue
        return found

    return _run(take)


def originate_log(cell_data: Path) -> list[dict[str, Any]]:
    """The cell's record of every call really dialled (one JSON line each)."""
    path = cell_data / "originate.log"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


COMMAND_EXCHANGE = "agent-call.dispatchers.v3"


class Publisher:
    """One AMQP connection (its own event loop in a thread) for publishing many raw bodies
    from a synchronous test, as the SaaS would: persistent, mandatory, confirmed."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._connection: aio_pika.abc.AbstractConnection | None = None
        self._channel: aio_pika.abc.AbstractChannel | None = None
        self._call(self._open())

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(60)

    async def _open(self) -> None:
        self._connection = await aio_pika.connect(amqp_url())
        self._channel = await self._connection.channel(
            publisher_confirms=True, on_return_raises=True
        )

    def publish(
        self, routing_key: str, bodies: list[bytes], properties: dict[str, Any] | None = None
    ) -> None:
        async def send() -> None:
            assert self._channel is not None
            exchange = await self._channel.get_exchange(COMMAND_EXCHANGE, ensure=False)
            for body in bodies:
                message = aio_pika.Message(
                    body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT, **(properties or {})
                )
                await exchange.publish(message, routing_key=routing_key, mandatory=True)

        self._call(send())

    def close(self) -> None:
        if self._connection is not None:
            self._call(self._connection.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


def drop_dead_letters(queue: str) -> int:
    """Remove the dead letters that came from ``queue`` (their ``x-death`` header names
    it); every other dead letter goes back. Returns how many were removed."""

    def came_from(message: aio_pika.abc.AbstractIncomingMessage) -> bool:
        deaths = (message.headers or {}).get("x-death") or []
        assert isinstance(deaths, list)
        names = {d.get("queue") for d in deaths if isinstance(d, dict)}
        return queue in names or queue.encode() in names

    async def take(connection: aio_pika.abc.AbstractConnection) -> int:
        channel = await connection.channel()
        dead = await channel.declare_queue(DEAD_LETTER_QUEUE, passive=True)
        removed = 0
        while (message := await dead.get(no_ack=False, fail=False, timeout=5)) is not None:
            if came_from(message):
                await message.ack()
                removed += 1
        await channel.close()
        return removed

    return _run(take)

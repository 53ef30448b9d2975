"""Observing and bending the SaaS-owned topology from a test, as the SaaS operator could."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import aio_pika
import aiormq

from tests.services import amqp_url

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

"""The basic.get drain against a real RabbitMQ (D-CTL-4): empty, confirmed, resumable."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import aio_pika
import pytest
from aio_pika.abc import AbstractChannel, AbstractRobustConnection

from agentcall.dispatcher.control.drain import AmqpDrainer, task_queue_name
from tests.support.services import amqp_url

pytestmark = [pytest.mark.integration, pytest.mark.rabbitmq]


@pytest.fixture
async def connection() -> AsyncIterator[AbstractRobustConnection]:
    conn = await aio_pika.connect_robust(amqp_url())
    yield conn
    await conn.close()


async def fill(connection: AbstractRobustConnection, name: str, count: int) -> None:
    channel = await connection.channel(publisher_confirms=True)
    await channel.declare_queue(name, durable=True)
    body = b'{"command_type":"call.execute"}'
    for start in range(0, count, 500):
        await asyncio.gather(
            *(
                channel.default_exchange.publish(aio_pika.Message(body, delivery_mode=2), name)
                for _ in range(min(500, count - start))
            )
        )
    await channel.close()


async def count(connection: AbstractRobustConnection, name: str) -> int:
    channel = await connection.channel()
    queue = await channel.declare_queue(name, passive=True)
    await channel.close()
    return int(queue.declaration_result.message_count or 0)


def drainer(connection: AbstractRobustConnection, d: str) -> AmqpDrainer:
    async def channels() -> AbstractChannel:
        return await connection.channel(publisher_confirms=False)

    return AmqpDrainer(channels, d, parallel=4, ack_every=50)


async def test_drain_acks_everything_and_confirms_the_queue_empty_d_ctl_4(
    connection: AbstractRobustConnection,
) -> None:
    d, task = str(uuid.uuid4()), "task-drain"
    name = task_queue_name(d, task)
    await fill(connection, name, 600)
    progress: list[int] = []

    async def note(acked: int) -> None:
        progress.append(acked)

    try:
        report = await drainer(connection, d).drain(task, note)
        assert report.acked == 600 and not report.queue_missing
        assert progress[-1] == 600
        assert await count(connection, name) == 0
    finally:
        channel = await connection.channel()
        await channel.queue_delete(name)
        await channel.close()


async def test_a_drain_killed_midway_is_completed_by_the_next_one_d_ctl_4(
    connection: AbstractRobustConnection,
) -> None:
    """The drain's connection dies mid-way: its unacked deliveries return to the queue and
    the next drain empties it; the queue is never left with work nor double-counted."""
    d, task = str(uuid.uuid4()), "task-kill"
    name = task_queue_name(d, task)
    await fill(connection, name, 2000)
    doomed = await aio_pika.connect(amqp_url())

    async def channels() -> AbstractChannel:
        return await doomed.channel(publisher_confirms=False)

    async def note(acked: int) -> None:
        return None

    try:
        first = asyncio.create_task(AmqpDrainer(channels, d, parallel=1).drain(task, note))
        while await count(connection, name) > 1500:
            await asyncio.sleep(0.01)
        await doomed.close()  # like SIGKILL: the broker requeues what was not ACKed
        await asyncio.gather(first, return_exceptions=True)
        left = await count(connection, name)
        assert 0 < left < 2000
        report = await drainer(connection, d).drain(task, note)
        assert report.acked == left and await count(connection, name) == 0
    finally:
        channel = await connection.channel()
        await channel.queue_delete(name)
        await channel.close()


async def test_a_retired_queue_counts_as_drained(connection: AbstractRobustConnection) -> None:
    async def note(acked: int) -> None:
        return None

    report = await drainer(connection, str(uuid.uuid4())).drain("task-gone", note)
    assert report.queue_missing and report.acked == 0

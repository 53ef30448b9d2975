"""The outbox relay on a real broker and a real SQLite file (D-MQ-4, D-ID-3, D-RES-1)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import aio_pika
import pytest

from dispatcher.mq.link import AmqpLink
from dispatcher.mq.names import RESULT_EXCHANGE
from dispatcher.mq.publisher import OutboxRelay
from dispatcher.store import outbox
from dispatcher.store.db import Database
from tests.services import amqp_url

pytestmark = [pytest.mark.integration, pytest.mark.rabbitmq]
NOW = datetime(2026, 9, 21, tzinfo=UTC)


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "state.sqlite")
    yield database
    await database.close()


@pytest.fixture
async def broker() -> AsyncIterator[aio_pika.abc.AbstractConnection]:
    connection = await aio_pika.connect(amqp_url())
    channel = await connection.channel()
    await channel.declare_exchange(RESULT_EXCHANGE, "topic", durable=True)  # as the SaaS does
    yield connection
    await connection.close()


async def enqueue(db: Database, route: str, event_id: str, body: dict[str, object]) -> None:
    await db.write(
        outbox.enqueue,
        event_id=event_id,
        event_type="command.result",
        routing_key=route,
        body=body,
        now=NOW,
    )


async def until(check: object, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not await check():  # type: ignore[operator]
            await asyncio.sleep(0.05)


async def test_delivered_only_when_routable_then_republished_identically_d_mq_4(
    db: Database, broker: aio_pika.abc.AbstractConnection
) -> None:
    route = f"d.{uuid.uuid4()}.out"
    channel = await broker.channel()
    queue = await channel.declare_queue(f"it.relay.{uuid.uuid4()}", auto_delete=True)
    link = AmqpLink(amqp_url(), retry_s=0.1)
    relay = OutboxRelay(db, link, batch=100, retry_s=0.1, clock=lambda: NOW)
    await enqueue(db, route, "e-1", {"n": 1})
    await enqueue(db, route, "e-big", {"blob": "x" * 8_388_608})  # D-ID-3: never published
    tasks = [asyncio.create_task(link.run()), asyncio.create_task(relay.run())]
    try:
        await until(lambda: _failures(relay, 1))
        assert (await db.read(outbox.counts))["pending"] == 1, "unroutable stays pending"
        await queue.bind(RESULT_EXCHANGE, route)
        await until(lambda: _delivered(db, 1))
        assert link.publisher is not None
        await link.publisher.close()  # the broker may close a channel: the relay reopens it
        await enqueue(db, route, "e-2", {"n": 2})
        relay.wake()
        await until(lambda: _delivered(db, 2))
    finally:
        for task in tasks:
            task.cancel()
        await link.close()
    got = []
    while (message := await queue.get(fail=False, timeout=5)) is not None:
        got.append((message.message_id, message.body, message.delivery_mode))
        await message.ack()
    assert got[-2:] == [
        ("e-1", b'{"n":1}', aio_pika.DeliveryMode.PERSISTENT),
        ("e-2", b'{"n":2}', aio_pika.DeliveryMode.PERSISTENT),
    ]
    counts = await db.read(outbox.counts)
    assert counts == {"pending": 0, "delivered": 2, "blocked_payload_too_large": 1}


async def _failures(relay: OutboxRelay, at_least: int) -> bool:
    return relay.failures >= at_least


async def _delivered(db: Database, n: int) -> bool:
    return (await db.read(outbox.counts))["delivered"] >= n

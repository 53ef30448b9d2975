"""The outbox relay on a real broker and a real SQLite file (D-MQ-4, D-ID-3, D-RES-1)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import aio_pika
import aiormq
import pytest

from agentcall.dispatcher.domain.reconnect import ReconnectPolicy
from agentcall.dispatcher.mq.confirms import Outgoing, publish_round
from agentcall.dispatcher.mq.link import AmqpLink
from agentcall.dispatcher.mq.names import RESULT_EXCHANGE
from agentcall.dispatcher.mq.publisher import OutboxRelay, properties
from agentcall.dispatcher.store import outbox
from agentcall.dispatcher.store.db import Database
from agentcall.dispatcher.store.outbox import OutboxRow
from tests.support.services import amqp_url

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
    link = AmqpLink(amqp_url(), policy=ReconnectPolicy(0.05, 0.1))
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


async def test_one_write_round_confirms_each_message_and_fails_returned_ones_d_mq_4(
    broker: aio_pika.abc.AbstractConnection,
) -> None:
    """publish_round: every message has its own verdict — routable ones confirmed, an
    unroutable one (mandatory) returned — and arrives with the relay's properties, bodies
    above the frame size included."""
    bound, unbound = f"d.{uuid.uuid4()}.out", f"d.{uuid.uuid4()}.out"
    channel = await broker.channel()
    queue = await channel.declare_queue(f"it.round.{uuid.uuid4()}", auto_delete=True)
    await queue.bind(RESULT_EXCHANGE, bound)
    publisher = await broker.channel(publisher_confirms=True, on_return_raises=True)
    raw = await publisher.get_underlay_channel()
    assert isinstance(raw, aiormq.Channel)
    big = b"x" * (3 * raw.max_content_size + 17)
    rows = [
        OutboxRow(1, "r-1", "command.result", bound, b'{"n":1}'),
        OutboxRow(2, "r-2", "call.result", unbound, b'{"n":2}'),
        OutboxRow(3, "r-3", "call.result", bound, big),
        OutboxRow(4, "r-4", "command.result", bound, b'{"n":4}'),
    ]
    messages = [Outgoing(r.body, r.routing_key, properties(r)) for r in rows]
    verdicts = await publish_round(raw, RESULT_EXCHANGE, messages, 10)
    assert verdicts[0] is None and verdicts[2] is None and verdicts[3] is None
    assert verdicts[1] is not None and verdicts[1].startswith("returned")
    assert raw.confirmations == {} and raw.message_id_delivery_tag == {}
    again = await publish_round(raw, RESULT_EXCHANGE, messages[:1], 10)  # tags stay in step
    assert again == [None]
    got = []
    while (message := await queue.get(fail=False, timeout=5)) is not None:
        got.append(message)
        await message.ack()
    assert [(m.message_id, m.type, m.body) for m in got] == [
        ("r-1", "command.result", b'{"n":1}'),
        ("r-3", "call.result", big),
        ("r-4", "command.result", b'{"n":4}'),
        ("r-1", "command.result", b'{"n":1}'),
    ]
    assert {(m.content_type, m.delivery_mode) for m in got} == {
        ("application/json", aio_pika.DeliveryMode.PERSISTENT)
    }

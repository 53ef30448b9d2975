"""The D's AMQP link under the shared TCP proxy to the real RabbitMQ: refused, cut and slowed
connections are retried by the D's one reconnect policy (domain/reconnect.py), and the D keeps
its guarantees across them (D-MQ-4): a delivery held when the link is lost is never acked but
redelivered once the consumers resume, and a result stored while the broker is away is
published once it is back (the outbox never loses it)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import aio_pika
import pytest

from agentcall.dispatcher.control.consumer import ControlQueueConsumer, control_queue_name
from agentcall.dispatcher.control.service import ControlSettle
from agentcall.dispatcher.domain.reconnect import ReconnectPolicy
from agentcall.dispatcher.mq.consumers import Delivery, TaskConsumers
from agentcall.dispatcher.mq.link import AmqpLink
from agentcall.dispatcher.mq.names import RESULT_EXCHANGE, task_queue
from agentcall.dispatcher.mq.publisher import OutboxRelay
from agentcall.dispatcher.store import outbox
from agentcall.dispatcher.store.db import Database
from tests.support.services import amqp_url
from tests.support.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.integration, pytest.mark.rabbitmq]
NOW = datetime(2026, 9, 21, tzinfo=UTC)
POLICY = ReconnectPolicy(base_s=0.05, cap_s=0.4)


class Jitter:
    """The link's jitter source, counting how often the loop asked the policy for a delay."""

    def __init__(self) -> None:
        self.asked = 0

    def __call__(self) -> float:
        self.asked += 1
        return 0.5


async def until(check: Callable[[], bool | Awaitable[bool]], timeout: float = 15.0) -> None:
    async with asyncio.timeout(timeout):
        while True:
            answer = check()
            if await answer if not isinstance(answer, bool) else answer:
                return
            await asyncio.sleep(0.02)


@pytest.fixture
def proxy() -> Iterator[TcpProxy]:
    with TcpProxy.for_url(amqp_url()) as relay:
        yield relay


@pytest.fixture
async def broker() -> AsyncIterator[aio_pika.abc.AbstractChannel]:
    connection = await aio_pika.connect(amqp_url())  # straight to the broker, not proxied
    yield await connection.channel()
    await connection.close()


async def running(link: AmqpLink) -> asyncio.Task[None]:
    return asyncio.create_task(link.run(), name="link")


async def stop(*tasks: asyncio.Task[None], link: AmqpLink) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await link.close()


async def test_a_refused_broker_is_retried_by_the_policy_until_it_accepts_d_mq_4(
    proxy: TcpProxy,
) -> None:
    proxy.cut()  # nothing listens: every connection is refused
    jitter = Jitter()
    link = AmqpLink(proxy.url(amqp_url()), policy=POLICY, jitter=jitter)
    runner = await running(link)
    try:
        await until(lambda: link.failures >= 4)
        assert not link.connected.is_set() and link.reconnects == 0
        assert link.last_error is not None and "Connection" in link.last_error
        assert jitter.asked >= 4, "every refused try waited the policy's delay"
        proxy.restore()
        await until(link.connected.is_set)
        assert (link.failures, link.reconnects) == (0, 1), "one success resets the count"
    finally:
        await stop(runner, link=link)


async def test_a_handshake_slower_than_the_timeout_is_retried_until_the_link_is_fast_d_mq_4(
    proxy: TcpProxy,
) -> None:
    proxy.delay_s = 1.0  # every chunk held 1 s: the AMQP handshake outlasts 0.3 s
    link = AmqpLink(proxy.url(amqp_url()), policy=POLICY, connect_timeout_s=0.3)
    runner = await running(link)
    try:
        await until(lambda: link.failures >= 2)
        assert not link.connected.is_set()
        assert link.last_error is not None and "Timeout" in link.last_error
        proxy.delay_s = 0.0
        await until(link.connected.is_set)
        assert link.failures == 0
    finally:
        await stop(runner, link=link)


async def test_a_cut_link_never_acks_its_held_delivery_and_consumers_resume_d_mq_4(
    proxy: TcpProxy, broker: aio_pika.abc.AbstractChannel
) -> None:
    dispatcher_id = f"reconnect-{uuid.uuid4().hex[:8]}"
    queue = await broker.declare_queue(task_queue(dispatcher_id, "t1"))
    link = AmqpLink(proxy.url(amqp_url()), policy=POLICY)
    delivered: list[Delivery] = []
    consumers = TaskConsumers(link, dispatcher_id, 10, delivered.append)
    link.on_down(consumers.on_link_down)
    runner = await running(link)
    try:
        await until(link.connected.is_set)
        await broker.default_exchange.publish(aio_pika.Message(b"command-1"), queue.name)
        await consumers.reconcile({"t1"})
        await until(lambda: len(delivered) == 1)  # held by the D, not acked yet

        proxy.cut()  # the broker goes away: the connection is dropped, new ones refused
        await until(lambda: link.failures >= 2)
        assert not consumers.is_consuming("t1")
        proxy.restore()
        await until(link.connected.is_set)
        await consumers.reconcile({"t1"})  # what the D's reconcile loop does after on_up
        await until(lambda: len(delivered) == 2)
        assert [d.body for d in delivered] == [b"command-1", b"command-1"], "redelivered"
        assert consumers.is_consuming("t1")
    finally:
        await stop(runner, link=link)
        await queue.delete(if_unused=False, if_empty=False)


async def test_the_control_consumer_survives_a_cut_link_and_consumes_again_d_mq_4(
    proxy: TcpProxy, broker: aio_pika.abc.AbstractChannel
) -> None:
    """Its consumption ends with the connection (with or without an error): it waits the
    policy's delay and consumes again once the link is back; the D does not stop."""
    dispatcher_id = f"reconnect-{uuid.uuid4().hex[:8]}"
    queue = await broker.declare_queue(control_queue_name(dispatcher_id))
    handled: list[bytes] = []

    async def handle(body: bytes, source: str) -> ControlSettle:
        handled.append(body)
        return ControlSettle.ACK

    link = AmqpLink(proxy.url(amqp_url()), policy=POLICY)
    consumer = ControlQueueConsumer(link.channel, dispatcher_id, handle, policy=POLICY)
    tasks = [await running(link), asyncio.create_task(consumer.run())]
    try:
        await until(lambda: consumer.state == "consuming")
        await broker.default_exchange.publish(aio_pika.Message(b"control-1"), queue.name)
        await until(lambda: handled == [b"control-1"])
        proxy.cut()
        await until(lambda: link.failures >= 2 and consumer.failures >= 2)
        assert not tasks[1].done(), "the consumer loop is still running"
        proxy.restore()
        await until(lambda: consumer.state == "consuming" and consumer.failures == 0)
        await broker.default_exchange.publish(aio_pika.Message(b"control-2"), queue.name)
        await until(lambda: handled == [b"control-1", b"control-2"])
    finally:
        await stop(*tasks, link=link)
        await queue.delete(if_unused=False, if_empty=False)


async def test_a_result_stored_while_the_broker_is_away_is_published_once_back_d_mq_4(
    proxy: TcpProxy, broker: aio_pika.abc.AbstractChannel, tmp_path: Path
) -> None:
    await broker.declare_exchange(RESULT_EXCHANGE, "topic", durable=True)  # as the SaaS does
    route = f"d.{uuid.uuid4()}.out"
    queue = await broker.declare_queue(f"it.reconnect.{uuid.uuid4()}", auto_delete=True)
    await queue.bind(RESULT_EXCHANGE, route)
    db = await Database.open(tmp_path / "state.sqlite")
    link = AmqpLink(proxy.url(amqp_url()), policy=POLICY)
    relay = OutboxRelay(db, link, batch=100, retry_s=0.2, clock=lambda: NOW)
    tasks = [await running(link), asyncio.create_task(relay.run())]
    try:
        await until(link.connected.is_set)
        proxy.cut()
        await until(lambda: link.failures >= 2)
        await db.write(
            outbox.enqueue,
            event_id="e-away",
            event_type="command.result",
            routing_key=route,
            body={"n": 1},
            now=NOW,
        )
        relay.wake()
        await asyncio.sleep(0.3)  # the relay waits for the link; nothing may be marked sent
        assert (await db.read(outbox.counts))["pending"] == 1
        proxy.restore()
        await until(lambda: _delivered(db))
        message = await queue.get(timeout=5)
        assert (message.message_id, message.body) == ("e-away", b'{"n":1}')
        await message.ack()
    finally:
        await stop(*tasks, link=link)
        await db.close()


async def _delivered(db: Database) -> bool:
    return (await db.read(outbox.counts))["delivered"] == 1

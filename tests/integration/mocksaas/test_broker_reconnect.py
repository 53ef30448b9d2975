"""The Mock SaaS broker link is aio-pika's robust connection (its one reconnect policy):
through the shared TCP proxy to the real RabbitMQ, a publish while the broker is cut or
refusing gets an error per message and never raises (the outbox keeps them pending), the
robust connection comes back by itself once the broker accepts again, and a slow link
still confirms. (A whole server cut during calls: `test_idempotent_calls.py`.)"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator

import aio_pika
import pytest

from agentcall.mocksaas.amqp.broker import Broker
from agentcall.mocksaas.store.outbox import OutgoingMessage
from tests.support.services import amqp_url
from tests.support.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.integration, pytest.mark.rabbitmq]


@pytest.fixture
def proxy() -> Iterator[TcpProxy]:
    with TcpProxy.for_url(amqp_url()) as relay:
        yield relay


@pytest.fixture
async def queue() -> AsyncIterator[str]:
    connection = await aio_pika.connect(amqp_url())  # straight to the broker
    channel = await connection.channel()
    declared = await channel.declare_queue(f"it.mocksaas.reconnect.{uuid.uuid4().hex}")
    yield declared.name
    await declared.delete(if_unused=False, if_empty=False)
    await connection.close()


def message(queue: str, n: int) -> OutgoingMessage:
    return OutgoingMessage("d1", "", queue, "call.execute", None, b'{"n":%d}' % n)


async def published_once_back(broker: Broker, queue: str, n: int) -> None:
    async with asyncio.timeout(30):  # the robust connection retries every 5 s
        while await broker.publish([message(queue, n)]) != [None]:
            await asyncio.sleep(0.2)


async def test_a_cut_then_refusing_broker_fails_publishes_softly_and_comes_back(
    proxy: TcpProxy, queue: str
) -> None:
    broker = Broker(proxy.url(amqp_url()))
    await broker.connect()
    try:
        assert await broker.publish([message(queue, 1)]) == [None]
        proxy.cut()  # the connection dies; new ones are refused
        await asyncio.sleep(0.5)
        errors = await broker.publish([message(queue, 2), message(queue, 3)])
        assert len(errors) == 2 and all(isinstance(e, str) and e for e in errors)
        proxy.restore()
        await published_once_back(broker, queue, 4)
        assert proxy.accepted >= 2, "a new connection, through the robust reconnect"
    finally:
        await broker.close()


async def test_a_slow_link_still_confirms(proxy: TcpProxy, queue: str) -> None:
    proxy.delay_s = 0.05
    broker = Broker(proxy.url(amqp_url()))
    await broker.connect()
    try:
        assert await broker.publish([message(queue, n) for n in range(5)]) == [None] * 5
    finally:
        await broker.close()

"""The broker link lost while a task consumer is being started (D-MQ-4, D-MQ-1).

The D's reconcile loop starts one consumer per task queue after every reconnection; a
second loss of the link in the middle of that start (a broker going down again at once)
used to escape the loop — `basic_consume` on the closed connection raised — and stop the
whole D. Here the link runs through a TCP proxy to the real RabbitMQ, and the proxy is cut
at the exact step: the start is recorded `disconnected`, nothing is raised, and the next
reconcile after the link is back consumes the queue again and delivers its messages.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aio_pika
import pytest

from agentcall.dispatcher.domain.reconnect import ReconnectPolicy
from agentcall.dispatcher.mq.consumers import Delivery, TaskConsumers
from agentcall.dispatcher.mq.link import AmqpLink
from agentcall.dispatcher.mq.names import task_queue
from tests.support.services import amqp_url
from tests.support.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.integration, pytest.mark.rabbitmq]


@dataclass
class Rig:
    proxy: TcpProxy
    link: AmqpLink
    consumers: TaskConsumers
    delivered: list[Delivery]
    publisher: aio_pika.abc.AbstractChannel  # straight to the broker, not through the proxy
    queue: str

    async def connected(self) -> None:
        await asyncio.wait_for(self.link.connected.wait(), 15)


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    dispatcher_id = f"link-loss-{uuid.uuid4().hex[:8]}"
    direct = await aio_pika.connect(amqp_url())
    channel = await direct.channel()
    queue = await channel.declare_queue(task_queue(dispatcher_id, "t1"))
    proxy = TcpProxy.for_url(amqp_url()).start()
    link = AmqpLink(proxy.url(amqp_url()), policy=ReconnectPolicy(0.05, 0.1))
    delivered: list[Delivery] = []
    consumers = TaskConsumers(link, dispatcher_id, 10, delivered.append)
    link.on_down(consumers.on_link_down)
    rig = Rig(proxy, link, consumers, delivered, channel, queue.name)
    runner = asyncio.create_task(link.run())
    try:
        await rig.connected()
        yield rig
    finally:
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
        await link.close()
        proxy.close()
        await queue.delete(if_unused=False, if_empty=False)
        await direct.close()


def cut_after(
    monkeypatch: pytest.MonkeyPatch, target: Any, name: str, proxy: TcpProxy
) -> list[bool]:
    """Cut the proxy once, right after ``target.name`` answered (the next AMQP step of the
    start then meets a closed connection)."""
    original: Callable[..., Awaitable[Any]] = getattr(target, name)
    cuts: list[bool] = []

    async def step(*args: Any, **kwargs: Any) -> Any:
        answer = await original(*args, **kwargs)
        if not cuts:
            cuts.append(True)
            await asyncio.to_thread(proxy.cut)
            await asyncio.sleep(0.05)  # the client has read the end of its connection
        return answer

    monkeypatch.setattr(target, name, step)
    return cuts


def cut_before_channel(
    monkeypatch: pytest.MonkeyPatch, link: AmqpLink, proxy: TcpProxy
) -> list[bool]:
    """Cut the proxy once, right before a channel is asked for, and ask the moment aiormq's
    connection below has closed: aio_pika's connection above still says it is open for a
    few loop turns, so the ask meets aiormq's `RuntimeError('… closed')`."""
    original = link.channel
    cuts: list[bool] = []

    async def step() -> Any:
        if not cuts:
            cuts.append(True)
            underlay = link.connection.transport if link.connection is not None else None
            await asyncio.to_thread(proxy.cut)
            for _ in range(100_000):  # one loop turn at a time: ask in the turn it closes
                if underlay is None or underlay.connection.is_closed:
                    break
                await asyncio.sleep(0)
        return await original()

    monkeypatch.setattr(link, "channel", step)
    return cuts


@pytest.mark.parametrize("step", ["channel", "open_channel", "passive_declare"])
async def test_link_lost_while_a_consumer_starts_is_survived_and_resumed_d_mq_4(
    rig: Rig, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    r = rig
    if step == "channel":  # the channel is asked of a connection closed only below
        cuts = cut_before_channel(monkeypatch, r.link, r.proxy)
    elif step == "open_channel":  # then the passive declare meets the closed connection
        cuts = cut_after(monkeypatch, r.consumers, "_open_channel", r.proxy)
    else:  # then `basic_consume` does
        cuts = cut_after(monkeypatch, aio_pika.Channel, "declare_queue", r.proxy)

    await r.consumers.reconcile({"t1"})  # raised out of the loop before: the D stopped

    assert cuts, "the link was cut during the start"
    assert not r.consumers.is_consuming("t1")
    # `error: ConnectionError`: the link had already noticed the loss when the channel was
    # asked for (a loaded machine); the start is survived all the same
    survived = {"disconnected", "error: AMQPConnectionError", "error: ConnectionError"}
    assert r.consumers.status().of("t1") in survived

    r.proxy.restore()
    for _ in range(300):  # the link's own reconnection, not the cut connection
        if r.link.reconnects >= 2 and r.link.connected.is_set():
            break
        await asyncio.sleep(0.05)
    await r.connected()
    await r.consumers.reconcile({"t1"})
    assert r.consumers.status().of("t1") == "consuming"
    await r.publisher.default_exchange.publish(aio_pika.Message(b"{}"), routing_key=r.queue)
    for _ in range(100):
        if r.delivered:
            break
        await asyncio.sleep(0.05)
    assert [d.body for d in r.delivered] == [b"{}"]

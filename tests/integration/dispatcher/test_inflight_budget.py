"""The D's in-flight budget: unacknowledged deliveries over all task queues stay within it.

Each consumed task queue gets an equal share of ``inflight`` as its prefetch, so a backlog
waits in RabbitMQ instead of inside the D (D-MQ-4: nothing is acknowledged before its
decision commit, so what is delivered and not yet settled is what waits in the D). When the
number of consumed tasks changes, running consumers take the new share. Real RabbitMQ.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aio_pika
import pytest

from agentcall.dispatcher.domain.reconnect import ReconnectPolicy
from agentcall.dispatcher.mq.consumers import Delivery, TaskConsumers, task_prefetch
from agentcall.dispatcher.mq.link import AmqpLink
from agentcall.dispatcher.mq.names import task_queue
from agentcall.dispatcher.mq.settle import Settle
from tests.support.services import amqp_url
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.rabbitmq]

TASKS = ["t1", "t2", "t3", "t4"]
BACKLOG = 40  # per task queue, far more than any share


@dataclass
class Rig:
    consumers: TaskConsumers
    delivered: list[Delivery]

    async def settled_all(self) -> None:
        pending, self.delivered[:] = list(self.delivered), []
        for delivery in pending:
            await delivery.acks.settle([(delivery.tag, Settle.ACK)])

    def per_task(self) -> Counter[str]:
        return Counter(d.task_id for d in self.delivered)


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    dispatcher_id = f"budget-{uuid.uuid4().hex[:8]}"
    direct = await aio_pika.connect(amqp_url())
    channel = await direct.channel()
    queues = [await channel.declare_queue(task_queue(dispatcher_id, t)) for t in TASKS]
    for queue in queues:
        for i in range(BACKLOG):
            await channel.default_exchange.publish(aio_pika.Message(f"{i}".encode()), queue.name)
    link = AmqpLink(amqp_url(), policy=ReconnectPolicy(0.05, 0.1))
    delivered: list[Delivery] = []
    consumers = TaskConsumers(link, dispatcher_id, 64, delivered.append, inflight=12)
    runner = asyncio.create_task(link.run())
    try:
        await asyncio.wait_for(link.connected.wait(), 15)
        yield Rig(consumers, delivered)
    finally:
        await consumers.close()
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
        await link.close()
        for queue in queues:
            await queue.delete(if_unused=False, if_empty=False)
        await direct.close()


async def held_at(rig: Rig, total: int) -> None:
    """``total`` deliveries arrive, and no more than that while none is settled."""

    async def arrived() -> bool:
        return len(rig.delivered) >= total

    await wait_until(arrived, 15, f"{total} deliveries")
    await asyncio.sleep(0.5)  # the broker had the time to push more, were it allowed to
    assert len(rig.delivered) == total


def test_each_task_queue_gets_an_equal_share_of_the_budget_within_its_prefetch() -> None:
    assert task_prefetch(64, 128, 16) == 8
    assert task_prefetch(64, 128, 1) == 64  # never above the per-queue prefetch
    assert task_prefetch(64, 128, 256) == 1  # at least one delivery per queue
    assert task_prefetch(64, 128, 0) == 64


async def test_unacknowledged_deliveries_over_all_task_queues_stay_within_the_budget_d_mq_4(
    rig: Rig,
) -> None:
    await rig.consumers.reconcile(set(TASKS[:2]))
    await held_at(rig, 12)
    assert rig.per_task() == {"t1": 6, "t2": 6}
    await rig.consumers.reconcile(set(TASKS))  # twice the tasks: running ones take half
    await asyncio.sleep(0.5)
    await rig.settled_all()  # (the restarted consumers' older deliveries among them)
    await held_at(rig, 12)
    assert rig.per_task() == {"t1": 3, "t2": 3, "t3": 3, "t4": 3}
    assert all(rig.consumers.is_consuming(t) for t in TASKS)

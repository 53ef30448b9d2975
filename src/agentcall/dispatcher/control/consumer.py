"""Consumer of the D's control queue ``agent-call.d.<D>.control.v3`` (D-MQ-1, D-CTL-1).

Deliveries are handled one at a time in delivery order: each is persisted (closing
admission for pause/stop) before it is ACKed (D-MQ-4), and invalid ones are
dead-lettered (D-MQ-5). Controls keep flowing before the start-up gate opens (D-DISC-6).
If handling fails (e.g. the database), the channel is closed so the broker requeues the
delivery in place, and consumption restarts after the D's reconnect delay
(``domain/reconnect.py``: capped, jittered, counted from zero once the queue is consumed).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable

import aio_pika
from aio_pika.abc import AbstractChannel, AbstractIncomingMessage

from agentcall.dispatcher.control.service import ControlSettle
from agentcall.dispatcher.domain.reconnect import AMQP_LINK, ReconnectPolicy
from agentcall.dispatcher.logs import handled, log
from agentcall.dispatcher.mq.cancel import raise_if_cancelling

LOG = logging.getLogger("dispatcher.control.consumer")
ChannelFactory = Callable[[], Awaitable[AbstractChannel]]
Handler = Callable[[bytes, str], Awaitable[ControlSettle]]


def control_queue_name(dispatcher_id: str) -> str:
    return f"agent-call.d.{dispatcher_id}.control.v3"


class ControlQueueConsumer:
    def __init__(
        self,
        channels: ChannelFactory,
        dispatcher_id: str,
        handle: Handler,
        *,
        prefetch: int = 16,
        policy: ReconnectPolicy = AMQP_LINK,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self._channels = channels
        self.queue = control_queue_name(dispatcher_id)
        self._handle = handle
        self._prefetch = prefetch
        self._policy, self._jitter = policy, jitter
        self.failures = 0  # failed starts in a row; 0 once the queue was consumed
        self.state = "starting"
        self.last_error: str | None = None

    async def run(self) -> None:
        while True:
            try:
                await self._consume()
            except (aio_pika.exceptions.AMQPException, ConnectionError, OSError) as exc:
                raise_if_cancelling(exc)
                self._failed("amqp", exc)
            except Exception as exc:  # handling failed: the delivery is requeued in place
                raise_if_cancelling(exc)
                handled(LOG, "control.consumer", exc, queue=self.queue)
                self._failed("handler", exc)
            self.failures += 1  # also when consumption ended without an error (channel closed)
            await asyncio.sleep(self._policy.delay(self.failures, self._jitter()))

    def _failed(self, where: str, exc: BaseException) -> None:
        self.state = "retrying"
        self.last_error = f"{where}: {type(exc).__name__}: {exc}"[:300]
        log(LOG, logging.WARNING, "control.consumer.retry", error=self.last_error)

    async def _consume(self) -> None:
        channel = await self._channels()
        try:
            await channel.set_qos(prefetch_count=self._prefetch)
            queue = await channel.declare_queue(self.queue, passive=True)
            self.state = "consuming"
            self.failures = 0
            async with queue.iterator() as messages:
                async for message in messages:
                    await self._one(message)
        finally:
            if not channel.is_closed:
                await channel.close()

    async def _one(self, message: AbstractIncomingMessage) -> None:
        settle = await self._handle(message.body, f"mq:{self.queue}")
        if settle is ControlSettle.ACK:
            await message.ack()
        else:
            await message.nack(requeue=False)

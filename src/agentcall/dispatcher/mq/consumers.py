"""One consumer per open task queue (D-MQ-1, D-MQ-4, D-MQ-6, D-DISC-6).

Each task gets its own channel whose QoS is the task's share of the D's in-flight budget
(:func:`task_prefetch`): unacknowledged deliveries over every task queue stay within
``inflight`` (at least one per task), so a backlog waits in RabbitMQ, not inside the D,
and the wait between a delivery and its decision commit stays about ``inflight`` divided by
the decision rate. Before consuming, the queue's
existence is verified with a passive declare (the SaaS owns the topology); a missing
queue fails closed for that task only — it is logged, shown in /status and retried on the
next reconcile, never a crash. Deliveries are handed to the intake; settling (ACK after
the inbox commit, dead-letter, requeue) happens there, through the channel's
:class:`~agentcall.dispatcher.mq.settle.ChannelAcks`.

The hot path uses the channel's aiormq layer directly (``basic_consume`` with a plain
callback; settling in :mod:`agentcall.dispatcher.mq.settle`): aio-pika's per-message wrapper cost
more CPU than the rest of the delivery. Channel management, QoS and the passive declare
stay on aio-pika.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

import aio_pika
from aio_pika.abc import AbstractChannel
from aiormq.abc import AbstractChannel as RawChannel
from aiormq.abc import DeliveredMessage

from agentcall.dispatcher.logs import handled, log
from agentcall.dispatcher.mq.cancel import raise_if_cancelling
from agentcall.dispatcher.mq.link import AmqpLink
from agentcall.dispatcher.mq.names import MAX_TASK_QUEUES, task_queue
from agentcall.dispatcher.mq.settle import ChannelAcks

LOG = logging.getLogger("dispatcher.consumers")


@dataclass
class Delivery:
    """One prefetched message, where it came from and how to settle it."""

    task_id: str
    queue: str
    body: bytes
    tag: int
    acks: ChannelAcks
    received: float = field(default_factory=time.monotonic)
    traceparent: str | None = None  # the W3C header, read only while the D traces


def traceparent(message: DeliveredMessage) -> str | None:
    """The message's ``traceparent`` header, if it is a string."""
    headers = message.header.properties.headers or {}
    value = headers.get("traceparent")
    if isinstance(value, bytes):
        value = value.decode("ascii", "replace")
    return value if isinstance(value, str) else None


@dataclass
class _Channel:
    channel: AbstractChannel
    raw: RawChannel  # its aiormq layer: consume and settle (the hot path)
    acks: ChannelAcks


@dataclass
class _Consumer:
    held: _Channel
    tag: str
    prefetch: int


def task_prefetch(prefetch: int, inflight: int, tasks: int) -> int:
    """The QoS of one of ``tasks`` consumed task queues: an equal share of the in-flight
    budget, at most ``prefetch`` and at least 1."""
    return max(1, min(prefetch, inflight // max(1, tasks)))


@dataclass(frozen=True)
class ConsumersStatus:
    """The consumer state of every task seen (consuming, closed, queue_missing…)."""

    states: Mapping[str, str]

    def of(self, task_id: str) -> str:
        return self.states.get(task_id, "closed")


class TaskConsumers:
    def __init__(
        self,
        link: AmqpLink,
        dispatcher_id: str,
        prefetch: int,
        submit: Callable[[Delivery], None],
        traced: bool = False,
        inflight: int | None = None,
    ) -> None:
        self._inflight = prefetch * MAX_TASK_QUEUES if inflight is None else inflight
        self._share = prefetch
        self.traced = traced  # keep each delivery's traceparent header (DISPATCHER_TRACING)
        self._link = link
        self._dispatcher_id = dispatcher_id
        self._prefetch = prefetch
        self._submit = submit
        self._active: dict[str, _Consumer] = {}
        self._idle_channels: dict[str, _Channel] = {}
        self.states: dict[str, str] = {}
        self._held: set[str] = set()  # suspended by task control until released
        self._lock = asyncio.Lock()

    def status(self) -> ConsumersStatus:
        return ConsumersStatus(dict(self.states))

    def is_consuming(self, task_id: str) -> bool:
        return task_id in self._active

    @property
    def missing(self) -> set[str]:
        return {t for t, s in self.states.items() if s == "queue_missing"}

    async def reconcile(self, wanted: set[str]) -> None:
        """Consume exactly the queues of ``wanted`` tasks (at most 256, D-MQ-6)."""
        async with self._lock:
            for task_id in sorted(set(self._active) - wanted):
                await self._stop(task_id, "closed")
            consumed = [t for t in sorted(wanted)[:MAX_TASK_QUEUES] if t not in self._held]
            self._share = task_prefetch(self._prefetch, self._inflight, len(consumed))
            for task_id in consumed:
                if task_id not in self._active and self._link.connected.is_set():
                    await self._start(task_id)
            for task_id in [t for t in consumed if t in self._active]:
                if self._active[task_id].prefetch != self._share:
                    await self._requalify(task_id)
            for task_id in sorted(wanted)[MAX_TASK_QUEUES:]:
                self.states[task_id] = "over_queue_limit"
            for task_id in [t for t in self.states if t not in wanted and t not in self._active]:
                self.states[task_id] = "closed"

    async def _start(self, task_id: str) -> None:
        name = task_queue(self._dispatcher_id, task_id)
        connection = self._link.connection
        held: _Channel | None = None
        try:
            held = self._idle_channels.pop(task_id, None)
            if held is None or held.channel.is_closed:
                held = await self._open_channel()
            share = self._share
            await held.channel.set_qos(prefetch_count=share)
            await held.channel.declare_queue(name, passive=True)
            handler = self._handler(task_id, name, held.acks)
            ok = await held.raw.basic_consume(name, handler, no_ack=False)
        except aio_pika.exceptions.ChannelNotFoundEntity:
            if self.states.get(task_id) != "queue_missing":
                log(LOG, logging.WARNING, "consumer.queue_missing", task_id=task_id, queue=name)
            self.states[task_id] = "queue_missing"
            return
        except (aio_pika.exceptions.AMQPException, ConnectionError, OSError) as exc:
            raise_if_cancelling(exc)
            self.states[task_id] = f"error: {type(exc).__name__}"
            return
        except Exception as exc:  # aiormq fails pending calls with a bare `Exception`
            raise_if_cancelling(exc)  # when their connection is closed under them
            if not self._lost(connection, held):
                raise
            handled(LOG, "consumers.link_lost", exc, "consumer.link_lost", logging.WARNING)
            self.states[task_id] = "disconnected"
            return
        if self._lost(connection, held):  # the link went down as the broker said ConsumeOk
            self.states[task_id] = "disconnected"
            return
        assert ok.consumer_tag is not None
        self._active[task_id] = _Consumer(held, ok.consumer_tag, share)
        self.states[task_id] = "consuming"
        log(LOG, logging.INFO, "consumer.started", task_id=task_id, prefetch=share)

    async def _requalify(self, task_id: str) -> None:
        """Give a running consumer the current share of the budget: a QoS applies to the
        consumers started after it, so the consumer is restarted on the same channel. Its
        unacknowledged deliveries stay on that channel and are settled as before (until they
        are, the task may hold them besides its new share); the task counts as consuming
        throughout (nothing is requeued for it)."""
        consumer = self._active[task_id]
        raw, share = consumer.held.raw, self._share
        name = task_queue(self._dispatcher_id, task_id)
        handler = self._handler(task_id, name, consumer.held.acks)
        try:
            await raw.basic_cancel(consumer.tag)
            await consumer.held.channel.set_qos(prefetch_count=share)
            ok = await raw.basic_consume(name, handler, no_ack=False)
        except Exception as exc:  # the link went down: the next reconcile starts it again
            raise_if_cancelling(exc)
            if not self._lost(self._link.connection, consumer.held):
                raise
            self._active.pop(task_id, None)
            self.states[task_id] = "disconnected"
            return
        assert ok.consumer_tag is not None
        consumer.tag, consumer.prefetch = ok.consumer_tag, share

    def _lost(self, connection: object, held: _Channel | None) -> bool:
        """Whether the connection a consumer was being started on is gone (the next
        reconcile after the reconnection starts it again)."""
        current = self._link.connection
        if current is None or current is not connection or current.is_closed:
            return True
        # aiormq's connection below closes a few loop turns before aio_pika's notices
        underlay = getattr(current, "transport", None)
        if underlay is None or underlay.connection.is_closed:
            return True
        return held is not None and held.channel.is_closed

    def _handler(
        self, task_id: str, name: str, acks: ChannelAcks
    ) -> Callable[[DeliveredMessage], Coroutine[Any, Any, None]]:
        async def on_message(message: DeliveredMessage) -> None:
            tag = message.delivery_tag
            assert tag is not None  # a Basic.Deliver always has one
            acks.received(tag)
            delivery = Delivery(task_id, name, message.body, tag, acks)
            if self.traced:
                delivery.traceparent = traceparent(message)
            self._submit(delivery)

        return on_message

    async def _open_channel(self) -> _Channel:
        channel = await self._link.channel()
        raw = await channel.get_underlay_channel()
        return _Channel(channel, raw, ChannelAcks(raw))

    async def _stop(self, task_id: str, state: str) -> None:
        consumer = self._active.pop(task_id)
        self.states[task_id] = state
        try:
            await consumer.held.raw.basic_cancel(consumer.tag)
            self._idle_channels[task_id] = consumer.held
        except (
            aio_pika.exceptions.AMQPException,
            aio_pika.exceptions.ChannelInvalidStateError,
            ConnectionError,
            OSError,
        ):
            pass
        log(LOG, logging.INFO, "consumer.stopped", task_id=task_id, state=state)

    async def suspend(self, task_id: str) -> None:
        """Task control (D-CTL-2/4): cancel the consumer and close its channel.

        Closing the channel makes the broker requeue, in place, every delivery of the task
        not yet ACKed — prefetched-but-unaccepted ones are never ACK-dropped; an accepted
        one whose ACK is lost is redelivered later and deduplicated by the inbox (D-CMD-1).
        The task stays held (no reconcile restarts it) until :meth:`release`.
        """
        async with self._lock:
            self._held.add(task_id)
            if task_id in self._active:
                await self._stop(task_id, "closed")
            held = self._idle_channels.pop(task_id, None)
            if held is not None and not held.channel.is_closed:
                try:
                    await held.channel.close()
                except (aio_pika.exceptions.AMQPException, ConnectionError, OSError) as exc:
                    raise_if_cancelling(exc)  # else: a dead channel already returned them

    def release(self, task_id: str) -> None:
        """Allow the next reconcile to consume the task's same queue again (D-CTL-3)."""
        self._held.discard(task_id)

    async def stop(self, task_id: str) -> None:
        async with self._lock:
            if task_id in self._active:
                await self._stop(task_id, "closed")

    async def on_link_down(self) -> None:
        self._active.clear()
        self._idle_channels.clear()
        for task_id in self.states:
            self.states[task_id] = "disconnected"

    async def close(self) -> None:
        async with self._lock:
            for task_id in list(self._active):
                await self._stop(task_id, "closed")
            for held in self._idle_channels.values():
                if not held.channel.is_closed:
                    await held.channel.close()
            self._idle_channels.clear()

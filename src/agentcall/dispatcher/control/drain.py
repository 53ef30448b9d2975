"""Drain of a stopped task's queue with ``basic.get`` (D-CTL-4).

Every message still in the queue is an unaccepted command of a task whose ``stopped``
barrier is already durable, so each one is ACKed silently: no dial, no command.result,
no call.result, no quota read, no inbox record. ACKs go in batches (``multiple=true``)
and several channels ``basic.get`` in parallel, because the order of a discarded backlog
does not matter and 10,000 sequential round trips would take tens of seconds.

Why no per-message inbox record (and no fsync) is safe: the barrier commit happened
before the first ``basic.get``; from then on the outcome of every message of this queue
is "discard", whatever its content or command_id. If the D dies mid-drain, unACKed
messages go back to the queue and are discarded again by the resumed drain; nothing was
dialled, published or reserved for them, so there is nothing to deduplicate.

The drain ends only when every channel has seen ``Basic.GetEmpty``, every delivery is
ACKed and a passive declare reports ``message_count == 0``; a queue that no longer
exists (already retired by the SaaS) counts as drained.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import aio_pika
from aio_pika.abc import AbstractChannel, AbstractIncomingMessage, AbstractQueue

from agentcall.dispatcher.control.ports import DrainReport, Progress

ChannelFactory = Callable[[], Awaitable[AbstractChannel]]


def task_queue_name(dispatcher_id: str, task_id: str) -> str:
    """Task queue of MQ topology v3 (D-MQ-1)."""
    return f"agent-call.d.{dispatcher_id}.task.{task_id}.v3"


class AmqpDrainer:
    def __init__(
        self,
        channels: ChannelFactory,
        dispatcher_id: str,
        *,
        parallel: int = 16,
        ack_every: int = 50,
    ) -> None:
        self._channels = channels
        self._dispatcher_id = dispatcher_id
        self._parallel = parallel
        self._ack_every = ack_every

    async def drain(self, task_id: str, progress: Progress) -> DrainReport:
        name = task_queue_name(self._dispatcher_id, task_id)
        acked = 0
        while True:
            counts = await asyncio.gather(*(self._worker(name) for _ in range(self._parallel)))
            acked += sum(counts)
            await progress(acked)
            remaining = await self._message_count(name)
            if remaining is None:
                return DrainReport(acked, queue_missing=True)
            if remaining == 0:
                return DrainReport(acked)

    async def _message_count(self, name: str) -> int | None:
        """Ready messages by passive declare; None when the queue does not exist."""
        channel = await self._channels()
        try:
            queue = await channel.declare_queue(name, passive=True)
        except aio_pika.exceptions.ChannelNotFoundEntity:
            return None
        finally:
            if not channel.is_closed:
                await channel.close()
        count = queue.declaration_result.message_count
        return int(count or 0)

    async def _worker(self, name: str) -> int:
        channel = await self._channels()
        try:
            queue = await channel.declare_queue(name, passive=True)
            return await self._get_until_empty(queue)
        except aio_pika.exceptions.ChannelNotFoundEntity:
            return 0
        finally:
            if not channel.is_closed:
                await channel.close()

    async def _get_until_empty(self, queue: AbstractQueue) -> int:
        taken = 0
        pending: AbstractIncomingMessage | None = None
        while True:
            message = await queue.get(no_ack=False, fail=False)
            if message is None:
                break
            taken += 1
            pending = message
            if taken % self._ack_every == 0:
                await message.ack(multiple=True)
                pending = None
        if pending is not None:
            await pending.ack(multiple=True)
        return taken

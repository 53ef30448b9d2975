"""Batches prefetched deliveries so that one transaction decides many commands.

Deliveries from every task consumer land in one queue; the intake takes what is there
(up to ``batch_max``) and hands it to the handler, so under load one SQLite commit (and
one fsync) covers a whole batch, and with a trickle each delivery is handled at once.
Up to ``overlap`` batches are in flight: while one waits for its commit on the database
thread, the next is decoded and validated. Their transactions still run one after the
other (one writer thread), so every decision sees the commits of the batches before it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agentcall.dispatcher.mq.consumers import Delivery

Handler = Callable[[list[Delivery]], Awaitable[None]]


@dataclass(frozen=True)
class IntakeStatus:
    waiting: int
    batches: int


class Intake:
    def __init__(self, handler: Handler, batch_max: int, overlap: int = 2) -> None:
        self._handler = handler
        self._batch_max = batch_max
        self._queue: asyncio.Queue[Delivery] = asyncio.Queue()
        self._slots = asyncio.Semaphore(overlap)
        self.batches = 0

    def submit(self, delivery: Delivery) -> None:
        self._queue.put_nowait(delivery)

    @property
    def waiting(self) -> int:
        return self._queue.qsize()

    def status(self) -> IntakeStatus:
        return IntakeStatus(self.waiting, self.batches)

    async def run(self) -> None:
        async with asyncio.TaskGroup() as group:
            while True:
                await self._slots.acquire()
                batch = [await self._queue.get()]
                while len(batch) < self._batch_max and not self._queue.empty():
                    batch.append(self._queue.get_nowait())
                self.batches += 1
                group.create_task(self._handle(batch))

    async def _handle(self, batch: list[Delivery]) -> None:
        try:
            await self._handler(batch)
        finally:
            self._slots.release()

"""Batches prefetched deliveries so that one transaction decides many commands.

Deliveries from every task consumer land in one queue; the intake takes what is there
(up to ``batch_max``) and hands it to the handler, so under load one SQLite commit (and
one fsync) covers a whole batch, and with a trickle each delivery is handled at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from dispatcher.mq.consumers import Delivery

Handler = Callable[[list[Delivery]], Awaitable[None]]


class Intake:
    def __init__(self, handler: Handler, batch_max: int) -> None:
        self._handler = handler
        self._batch_max = batch_max
        self._queue: asyncio.Queue[Delivery] = asyncio.Queue()
        self.batches = 0

    def submit(self, delivery: Delivery) -> None:
        self._queue.put_nowait(delivery)

    @property
    def waiting(self) -> int:
        return self._queue.qsize()

    async def run(self) -> None:
        while True:
            batch = [await self._queue.get()]
            while len(batch) < self._batch_max and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            self.batches += 1
            await self._handler(batch)

"""Batches prefetched deliveries so that one transaction decides many commands.

Deliveries from every task consumer land in one queue; the intake takes what is there
(up to ``batch_max``) and hands it to the handler, so under load one SQLite commit (and
one fsync) covers a whole batch, and with a trickle each delivery is handled at once.
Up to ``overlap`` batches are in flight: while one waits for its commit on the database
thread, the next is decoded and validated. Their transactions still run one after the
other (one writer thread), so every decision sees the commits of the batches before it.

A batch whose handling fails for any reason but the state database or the operating
system (which stop the process: the deliveries are redelivered after a restart) is taken
apart: each delivery is handled alone, and one that still fails alone is handed to
``quarantine`` (recorded redacted and dead-lettered, D-MQ-5). One message can therefore
never stop the intake, nor take the commands batched with it down.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agentcall.dispatcher.logs import handled
from agentcall.dispatcher.mq.cancel import raise_if_cancelling
from agentcall.dispatcher.mq.consumers import Delivery

LOG = logging.getLogger("dispatcher.intake")
Handler = Callable[[list[Delivery]], Awaitable[None]]
Quarantine = Callable[[Delivery, Exception], Awaitable[None]]


@dataclass(frozen=True)
class IntakeStatus:
    waiting: int
    batches: int


class Intake:
    def __init__(
        self,
        handler: Handler,
        batch_max: int,
        overlap: int = 2,
        quarantine: Quarantine | None = None,
    ) -> None:
        self._handler = handler
        self._quarantine = quarantine
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
            await self.handle(batch)
        finally:
            self._slots.release()

    async def handle(self, batch: list[Delivery]) -> None:
        """Handle one batch; if it fails, take it apart (see the module docstring)."""
        try:
            await self._handler(batch)
        except Exception as exc:
            raise_if_cancelling(exc)
            if self._quarantine is None or isinstance(exc, sqlite3.Error | OSError):
                raise
            if len(batch) == 1:
                await self._quarantine(batch[0], exc)
                return
            handled(LOG, "intake.batch", exc, size=len(batch))
            for delivery in batch:
                await self.handle([delivery])

"""Application-level group commit: steps submitted together run in one write transaction with
one database time (worker-protocol.md §5 "Batching"). A step makes all its checks before its
writes and answers protocol refusals as data (an error ack), never by raising. If a step raises,
the batch rolls back and each step runs again alone, so one bad step never takes the others
down; the failing step's caller gets the exception.

On SQLite there is one lane (the single-writer path); on MySQL/MariaDB a few lanes overlap
their commits."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection

from orbit.store.db import Database

T = TypeVar("T")
Step = Callable[[AsyncConnection, datetime], Awaitable[T]]
log = logging.getLogger("orbit.workers")


@dataclass(slots=True)
class _Job:
    step: Step[Any]
    future: asyncio.Future[Any]


class Batcher:
    def __init__(self, db: Database, lanes: int, max_batch: int = 128) -> None:
        self.db = db
        self.lanes = lanes
        self.max_batch = max_batch
        self._queue: asyncio.Queue[_Job] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        for lane in range(self.lanes):
            self._tasks.append(asyncio.create_task(self._lane(), name=f"orbit-batch-{lane}"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    async def run(self, step: Step[T]) -> T:
        """Run `step` in the next batch; its result or exception comes back here."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Job(step, future))
        return await future

    async def _lane(self) -> None:
        while True:
            jobs = [await self._queue.get()]
            while len(jobs) < self.max_batch and not self._queue.empty():
                jobs.append(self._queue.get_nowait())
            live = [job for job in jobs if not job.future.cancelled()]
            if live:
                await self._execute(live)

    async def _execute(self, jobs: list[_Job]) -> None:
        try:
            results = await self.db.retrying(lambda: self._transaction(jobs))
        except Exception as exc:  # the whole batch failed: isolate the culprit
            if len(jobs) == 1:
                _settle(jobs[0], exc=exc)
                return
            log.warning("batch of %d failed (%s); running its steps one by one", len(jobs), exc)
            for job in jobs:
                await self._execute([job])
            return
        for job, result in zip(jobs, results, strict=True):
            _settle(job, result=result)

    async def _transaction(self, jobs: list[_Job]) -> list[Any]:
        async with self.db.write() as conn:
            now = await self.db.now(conn)
            return [await job.step(conn, now) for job in jobs]


def _settle(job: _Job, result: Any = None, exc: BaseException | None = None) -> None:
    if job.future.done():
        return
    if exc is not None:
        job.future.set_exception(exc)
    else:
        job.future.set_result(result)

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
Many = Callable[[AsyncConnection, datetime, list[Any]], Awaitable[list[Any]]]
log = logging.getLogger("orbit.workers")


@dataclass(slots=True)
class _Job:
    step: Step[Any] | None
    future: asyncio.Future[Any]
    kind: str | None = None
    item: Any = None


class Batcher:
    """`run(step)` runs one step; `submit(kind, item)` joins the other items of its kind in the
    batch, which the kind's handler applies together (set-based statements)."""

    def __init__(
        self, db: Database, lanes: int, max_batch: int = 128, kinds: dict[str, Many] | None = None
    ) -> None:
        self.db = db
        self.lanes = lanes
        self.max_batch = max_batch
        self.kinds = dict(kinds or {})
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

    async def submit(self, kind: str, item: Any) -> Any:
        """Apply `item` with the handler of `kind`, together with the batch's other items."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Job(None, future, kind, item))
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
        results: list[Any] = [None] * len(jobs)
        groups: dict[str, list[int]] = {}
        async with self.db.write() as conn:
            now = await self.db.now(conn)
            for index, job in enumerate(jobs):
                if job.step is not None:
                    results[index] = await job.step(conn, now)
                else:
                    groups.setdefault(str(job.kind), []).append(index)
            for kind, indexes in groups.items():
                outcome = await self.kinds[kind](conn, now, [jobs[i].item for i in indexes])
                for index, result in zip(indexes, outcome, strict=True):
                    results[index] = result
        return results


def _settle(job: _Job, result: Any = None, exc: BaseException | None = None) -> None:
    if job.future.done():
        return
    if exc is not None:
        job.future.set_exception(exc)
    else:
        job.future.set_result(result)

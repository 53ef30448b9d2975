"""Application-level group commit: steps submitted together run in one write transaction with
one database time (worker-protocol.md §5 "Batching"). A step makes all its checks before its
writes and answers protocol refusals as data (an error ack), never by raising. If a step raises,
the batch rolls back and each step runs again alone, so one bad step never takes the others
down; the failing step's caller gets the exception.

On SQLite there is one lane (the single-writer path); on MySQL/MariaDB a few lanes overlap
their commits, and each lane keeps its SQLAlchemy connection between batches (no pool checkout,
return and reset per transaction: about a third of a small transaction's CPU). A connection
whose transaction failed goes back to the pool, rolled back (as after `db.write()`), and is not
kept; a kept one is renewed after `KEEP_S`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.store.db import Database, Dialect

T = TypeVar("T")
Step = Callable[[AsyncConnection, datetime], Awaitable[T]]
Many = Callable[[AsyncConnection, datetime, list[Any]], Awaitable[list[Any]]]
log = logging.getLogger("orbit.workers")
KEEP_S = 600.0  # a lane renews its connection after this (below the pool's recycle, 1 h)


@dataclass(slots=True)
class _Kept:
    """The connection a MySQL/MariaDB lane keeps between its transactions."""

    conn: AsyncConnection | None = None
    since: float = 0.0


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
        kept = _Kept()
        try:
            while True:
                jobs = [await self._queue.get()]
                while len(jobs) < self.max_batch and not self._queue.empty():
                    jobs.append(self._queue.get_nowait())
                live = [job for job in jobs if not job.future.cancelled()]
                if live:
                    await self._execute(live, kept)
        finally:
            if kept.conn is not None:
                await _close(kept.conn)

    async def _execute(self, jobs: list[_Job], kept: _Kept) -> None:
        try:
            results = await self.db.retrying(lambda: self._transaction(jobs, kept))
        except Exception as exc:  # the whole batch failed: isolate the culprit
            if len(jobs) == 1:
                _settle(jobs[0], exc=exc)
                return
            log.warning("batch of %d failed (%s); running its steps one by one", len(jobs), exc)
            for job in jobs:
                await self._execute([job], kept)
            return
        for job, result in zip(jobs, results, strict=True):
            _settle(job, result=result)

    @contextlib.asynccontextmanager
    async def _write(self, kept: _Kept) -> AsyncIterator[AsyncConnection]:
        """`db.write()`, on the lane's kept connection on MySQL/MariaDB."""
        if self.db.dialect is not Dialect.MYSQL:
            async with self.db.write() as single:
                yield single
            return
        conn = await self._take(kept)
        try:
            async with conn.begin():
                yield conn
        except BaseException:
            await _close(conn)  # rolled back by begin(): back to the pool, not kept
            raise
        kept.conn = conn

    async def _take(self, kept: _Kept) -> AsyncConnection:
        conn, kept.conn = kept.conn, None
        if conn is not None and time.monotonic() - kept.since <= KEEP_S:
            return conn
        if conn is not None:
            await _close(conn)
        kept.since = time.monotonic()
        return await self.db.engine.connect()

    async def _transaction(self, jobs: list[_Job], kept: _Kept) -> list[Any]:
        results: list[Any] = [None] * len(jobs)
        groups: dict[str, list[int]] = {}
        async with self._write(kept) as conn:
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


async def _close(conn: AsyncConnection) -> None:
    with contextlib.suppress(Exception):  # best effort: the server rolls back a lost session
        await conn.close()


def _settle(job: _Job, result: Any = None, exc: BaseException | None = None) -> None:
    if job.future.done():
        return
    if exc is not None:
        job.future.set_exception(exc)
    else:
        job.future.set_result(result)

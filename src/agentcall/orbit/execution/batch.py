"""Application-level group commit of the execution steps (worker-protocol.md §5 "Batching"):
steps submitted together run in one write transaction with one database time, through the
store's one group-commit primitive (`orbit.store.group_commit`). A step makes all its checks
before its writes and answers protocol refusals as data (an error ack), never by raising. If
a step raises, the batch rolls back and each step runs again alone, so one bad step never
takes the others down; the failing step's caller gets the exception.

On SQLite there is one lane (the single-writer path); on MySQL/MariaDB a few lanes overlap
their commits on connections kept between batches (`orbit.store.db.KeptWriter`)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.store.connector import HotConnection
from agentcall.orbit.store.db import Database, KeptWriter
from agentcall.orbit.store.group_commit import GroupCommit

T = TypeVar("T")
Step = Callable[[AsyncConnection, datetime], Awaitable[T]]
Many = Callable[[AsyncConnection, datetime, list[Any]], Awaitable[list[Any]]]
Clocked = Callable[[HotConnection, list[Any]], Awaitable[list[Any]]]
log = logging.getLogger("orbit.workers")


@dataclass(frozen=True, slots=True)
class _Job:
    step: Step[Any] | None
    kind: str | None = None
    item: Any = None


class Batcher:
    """`run(step)` runs one step; `submit(kind, item)` joins the other items of its kind in the
    batch, which the kind's handler applies together (set-based statements).

    `clocked[kind]`, on MySQL/MariaDB: how a batch holding items of that kind only is applied,
    on a `hot_write` session and without the batch's clock read: the handler reads the
    database clock with its first statement and may send the COMMIT with its writes (the lease
    round that a submit or a peer's hint starts on an idle connection)."""

    def __init__(
        self,
        db: Database,
        lanes: int,
        max_batch: int = 128,
        kinds: dict[str, Many] | None = None,
        clocked: dict[str, Clocked] | None = None,
    ) -> None:
        self.db = db
        self.kinds = dict(kinds or {})
        self.clocked = dict(clocked or {}) if db.commits_with_writes else {}
        self._writer = KeptWriter(db)
        self._commit: GroupCommit[_Job, Any] = GroupCommit(
            self._run, lanes=lanes, max_group=max_batch, drop_abandoned=True
        )

    async def stop(self) -> None:
        await self._commit.close()
        await self._writer.close()

    async def run(self, step: Step[T]) -> T:
        """Run `step` in the next batch; its result or exception comes back here."""
        result: T = await self._commit(_Job(step))
        return result

    async def submit(self, kind: str, item: Any) -> Any:
        """Apply `item` with the handler of `kind`, together with the batch's other items."""
        return await self._commit(_Job(None, kind, item))

    async def _run(self, jobs: list[_Job]) -> list[Any]:
        try:
            return await self.db.retrying(lambda: self._transaction(jobs))
        except Exception as exc:  # the whole batch failed: isolate the culprit
            if len(jobs) == 1:
                return [exc]
            log.warning("batch of %d failed (%s); running its steps one by one", len(jobs), exc)
            return [(await self._run([job]))[0] for job in jobs]

    async def _transaction(self, jobs: list[_Job]) -> list[Any]:
        results: list[Any] = [None] * len(jobs)
        groups: dict[str, list[int]] = {}
        kinds = {job.kind for job in jobs}
        if len(kinds) == 1 and (kind := str(kinds.pop())) in self.clocked:
            async with self.db.hot_write() as hot:
                return await self.clocked[kind](hot, [job.item for job in jobs])
        async with self._writer.write() as conn:
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

"""Application-level group commit of the execution steps (worker-protocol.md §5 "Batching"):
steps submitted together run in one write transaction with one database time, through the
store's one group-commit primitive (`agentcall.orbit.store.group_commit`). A step makes all its
checks before its writes and answers protocol refusals as data (an error ack), never by raising. If
a step raises, the batch rolls back and each step runs again alone, so one bad step never
takes the others down; the failing step's caller gets the exception.

On SQLite there is one lane (the single-writer path); on MySQL/MariaDB a few lanes overlap
their commits on connections kept between batches (`agentcall.orbit.store.db.KeptWriter`)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.store.connector import HotConnection
from agentcall.orbit.store.db import Database, KeptWriter
from agentcall.orbit.store.group_commit import GroupCommit

T = TypeVar("T")
I = TypeVar("I")  # noqa: E741 - an item's type
O = TypeVar("O")  # noqa: E741 - its outcome's type
Step = Callable[[AsyncConnection, datetime], Awaitable[T]]
log = logging.getLogger("orbit.workers")


@dataclass(frozen=True, slots=True, eq=False)
class Kind(Generic[I, O]):
    """A kind of batched item: items of one kind in a batch are applied together by its
    `Handler` and each gets its own outcome `O` back. Compared by identity."""

    name: str


@dataclass(frozen=True, slots=True)
class Handler(Generic[I, O]):
    """How the items of `kind` are applied: `apply(conn, now, items)` in the batch's
    transaction, one outcome per item in order. `clocked`, on MySQL/MariaDB: how a batch
    holding items of this kind only is applied, on a `hot_write` session and without the
    batch's clock read: it reads the database clock with its first statement and may send the
    COMMIT with its writes (the lease round that a submit or a peer's hint starts on an idle
    connection)."""

    kind: Kind[I, O]
    apply: Callable[[AsyncConnection, datetime, list[I]], Awaitable[list[O]]]
    clocked: Callable[[HotConnection, list[I]], Awaitable[list[O]]] | None = None


@dataclass(frozen=True, slots=True)
class _Job:
    step: Step[Any] | None
    kind: Kind[Any, Any] | None = None
    item: Any = None


class Batcher:
    """`run(step)` runs one step; `submit(kind, item)` joins the other items of its kind in the
    batch, which the kind's handler applies together (set-based statements)."""

    def __init__(
        self,
        db: Database,
        lanes: int,
        max_batch: int = 128,
        handlers: Sequence[Handler[Any, Any]] = (),
    ) -> None:
        self.db = db
        self.kinds = {handler.kind: handler for handler in handlers}
        self.clocked = (
            {h.kind: h.clocked for h in handlers if h.clocked is not None}
            if db.commits_with_writes
            else {}
        )
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

    async def submit(self, kind: Kind[I, O], item: I) -> O:
        """Apply `item` with the handler of `kind`, together with the batch's other items."""
        outcome: O = await self._commit(_Job(None, kind, item))
        return outcome

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
        groups: dict[Kind[Any, Any], list[int]] = {}
        kinds = {job.kind for job in jobs}
        if len(kinds) == 1 and (only := kinds.pop()) is not None and only in self.clocked:
            async with self.db.hot_write() as hot:
                return await self.clocked[only](hot, [job.item for job in jobs])
        async with self._writer.write() as conn:
            now = await self.db.now(conn)
            for index, job in enumerate(jobs):
                if job.step is not None:
                    results[index] = await job.step(conn, now)
                elif job.kind is not None:
                    groups.setdefault(job.kind, []).append(index)
            for kind, indexes in groups.items():
                outcome = await self.kinds[kind].apply(conn, now, [jobs[i].item for i in indexes])
                for index, result in zip(indexes, outcome, strict=True):
                    results[index] = result
        return results

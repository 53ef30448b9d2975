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


# a kind's items applied on a `hot_write` session (`Handler.clocked`)
Clocked = Callable[
    [HotConnection, datetime | None, list[I], bool], Awaitable[tuple[datetime | None, list[O]]]
]


@dataclass(frozen=True, slots=True)
class Handler(Generic[I, O]):
    """How the items of `kind` are applied: `apply(conn, now, items)` in the batch's
    transaction, one outcome per item in order. `clocked`, on MySQL/MariaDB: how they are
    applied in a batch of such kinds only (no `run` step), on a `hot_write` session and
    without a clock read of its own: `clocked(session, now, items, last)`, where `now` is the
    batch's clock if an earlier kind read it, or None (the kind's first locking read that
    finds rows reads it too), and `last` says that its writes end the transaction (they carry
    the COMMIT); it returns the clock with the outcomes. Two round trips less per batch."""

    kind: Kind[I, O]
    apply: Callable[[AsyncConnection, datetime, list[I]], Awaitable[list[O]]]
    clocked: Clocked[I, O] | None = None


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
        steps: list[int] = []
        for index, job in enumerate(jobs):
            if job.kind is None:
                steps.append(index)
            else:
                groups.setdefault(job.kind, []).append(index)
        if not steps and all(kind in self.clocked for kind in groups):
            return await self._hot(jobs, groups)
        async with self._writer.write() as conn:
            now = await self.db.now(conn)
            for index in steps:
                step = jobs[index].step
                assert step is not None
                results[index] = await step(conn, now)
            for kind, indexes in groups.items():
                outcome = await self.kinds[kind].apply(conn, now, [jobs[i].item for i in indexes])
                for index, result in zip(indexes, outcome, strict=True):
                    results[index] = result
        return results

    async def _hot(self, jobs: list[_Job], groups: dict[Kind[Any, Any], list[int]]) -> list[Any]:
        """A batch of kinds with `clocked` handlers only, on a `hot_write` session: the clock
        comes with the first locking read that finds rows, the COMMIT with the last writes."""
        results: list[Any] = [None] * len(jobs)
        now: datetime | None = None
        async with self.db.hot_write() as hot:
            for number, (kind, indexes) in enumerate(groups.items(), start=1):
                items = [jobs[i].item for i in indexes]
                now, outcome = await self.clocked[kind](hot, now, items, number == len(groups))
                for index, result in zip(indexes, outcome, strict=True):
                    results[index] = result
        return results

"""Application-level group commit: concurrent callers join one group, the group runs as one
unit (one transaction: one durable commit for all of them), and each caller gets its own
outcome only once the group is done.

There is no background task: a caller that finds fewer than `lanes` groups running starts a
lane, which takes everything waiting (up to `max_group`) as one group and goes on while callers
wait, then ends. Callers arriving during a commit therefore form the next group by themselves;
an idle process holds no task. A caller that goes away (cancelled) does not cancel its group;
with `drop_abandoned`, an item whose caller went away before its group formed is left out.

Both the submit path (`agentcall.orbit.store.submit_group`) and the execution batcher
(`agentcall.orbit.execution.batch`) commit through this one primitive.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

I = TypeVar("I")  # noqa: E741 - the item type
O = TypeVar("O")  # noqa: E741 - the outcome type
RunGroup = Callable[[list[I]], Awaitable[Sequence[O | BaseException]]]


class GroupCommit(Generic[I, O]):
    """`weight(item)` (e.g. its size in bytes) bounds a group by `max_weight` as well; a
    single item heavier than that still forms a group of its own. `close()` cancels the groups
    running (their callers hear CancelledError)."""

    def __init__(
        self,
        run: RunGroup[I, O],
        *,
        lanes: int,
        max_group: int = 64,
        weight: Callable[[I], int] | None = None,
        max_weight: int = 0,
        drop_abandoned: bool = False,
    ) -> None:
        if lanes < 1 or max_group < 1:
            raise ValueError("lanes and max_group must be at least 1")
        self._run = run
        self.lanes = lanes
        self.max_group = max_group
        self._weight = weight
        self.max_weight = max_weight
        self._drop_abandoned = drop_abandoned
        self._waiting: collections.deque[tuple[I, asyncio.Future[O]]] = collections.deque()
        self._active = 0  # lanes that will still look at `_waiting` before they end
        self._tasks: set[asyncio.Task[None]] = set()  # strong references while they run
        self.groups = 0  # groups run so far (for metrics and tests)
        self.items = 0

    async def __call__(self, item: I) -> O:
        """The outcome of `item`, decided and committed with the others of its group."""
        future: asyncio.Future[O] = asyncio.get_running_loop().create_future()
        self._waiting.append((item, future))
        if self._active < self.lanes:
            self._active += 1
            lane = asyncio.create_task(self._lane())
            self._tasks.add(lane)
            lane.add_done_callback(self._tasks.discard)
        return await future

    async def _lane(self) -> None:
        try:
            await self._groups()
        finally:  # at once, not in a done callback: a caller arriving now starts a new lane
            self._active -= 1

    async def close(self) -> None:
        lanes = list(self._tasks)
        for lane in lanes:
            lane.cancel()
        for lane in lanes:
            with contextlib.suppress(asyncio.CancelledError):
                await lane

    async def _groups(self) -> None:
        while self._waiting:
            group = self._take()
            if not group:
                continue
            self.groups += 1
            self.items += len(group)
            try:
                outcomes = await self._run([item for item, _ in group])
                if len(outcomes) != len(group):
                    raise RuntimeError("a group runner answered the wrong number of items")
            except BaseException as exc:  # noqa: BLE001 - every caller must hear of it
                for _, future in group:
                    _settle(future, exc)
                if not isinstance(exc, Exception):
                    raise
                continue
            for (_, future), outcome in zip(group, outcomes, strict=True):
                _settle(future, outcome)

    def _take(self) -> list[tuple[I, asyncio.Future[O]]]:
        group: list[tuple[I, asyncio.Future[O]]] = []
        total = 0
        while self._waiting and len(group) < self.max_group:
            item, future = self._waiting[0]
            if self._drop_abandoned and future.done():
                self._waiting.popleft()
                continue
            if self._weight is not None:
                total += self._weight(item)
                if group and total > self.max_weight:
                    break
            group.append(self._waiting.popleft())
        return group


def _settle(future: asyncio.Future[O], outcome: O | BaseException) -> None:
    if future.done():  # the caller went away
        return
    if isinstance(outcome, asyncio.CancelledError):
        future.cancel()
    elif isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)

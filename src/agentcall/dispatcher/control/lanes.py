"""Per-task serial lanes (D-CTL-1): one task's work strictly in order, tasks in parallel.

``submit(task_id, name, work)`` appends ``work`` (an async callable) to the task's lane.
A lane runs its items one after the other; a failing item is retried after the D's
reconnect policy's delay (``domain/reconnect.py``: from ``retry_s``, capped at
``retry_max_s``, jittered) and never skipped, so a later control of the same task never
overtakes an earlier one. Lanes of different tasks run concurrently. A lane's worker ends
when its queue is empty.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from agentcall.dispatcher.domain.reconnect import ReconnectPolicy
from agentcall.dispatcher.logs import handled
from agentcall.dispatcher.mq.cancel import raise_if_cancelling

LOG = logging.getLogger("dispatcher.control.lanes")
Work = Callable[[], Awaitable[None]]


@dataclass
class _Item:
    name: str
    work: Work
    done: asyncio.Future[None]


@dataclass
class _Lane:
    items: deque[_Item] = field(default_factory=deque)
    worker: asyncio.Task[None] | None = None
    current: str | None = None
    failures: int = 0
    last_error: str | None = None


class TaskLanes:
    def __init__(
        self,
        *,
        retry_s: float = 0.5,
        retry_max_s: float = 15.0,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self._policy = ReconnectPolicy(base_s=retry_s, cap_s=retry_max_s)
        self._jitter = jitter
        self._lanes: dict[str, _Lane] = {}
        self._closed = False

    def submit(self, task_id: str, name: str, work: Work) -> asyncio.Future[None]:
        """Queue ``work`` behind everything already queued for ``task_id``."""
        if self._closed:
            raise RuntimeError("control lanes are closed")
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        lane = self._lanes.setdefault(task_id, _Lane())
        lane.items.append(_Item(name, work, done))
        if lane.worker is None:
            lane.worker = asyncio.create_task(self._run(task_id, lane), name=f"lane:{task_id}")
        return done

    async def _run(self, task_id: str, lane: _Lane) -> None:
        while lane.items:
            item = lane.items[0]
            lane.current = item.name
            await self._until_done(task_id, lane, item)
            lane.items.popleft()
            if not item.done.done():
                item.done.set_result(None)
        lane.current = None
        lane.worker = None
        if self._lanes.get(task_id) is lane:
            del self._lanes[task_id]

    async def _until_done(self, task_id: str, lane: _Lane, item: _Item) -> None:
        while True:
            try:
                await item.work()
                lane.failures = 0
                return
            except Exception as exc:  # retried in place: never skip a control (D-CTL-1)
                raise_if_cancelling(exc)
                lane.failures += 1
                lane.last_error = f"{type(exc).__name__}: {exc}"[:300]
                delay = self._policy.delay(lane.failures, self._jitter())
                handled(
                    LOG,
                    "control.lane",
                    exc,
                    "control.lane.retry",
                    logging.WARNING,
                    task_id=task_id,
                    work=item.name,
                    retry_s=round(delay, 3),
                )
            await asyncio.sleep(delay)

    def snapshot(self) -> dict[str, dict[str, object]]:
        """Per busy lane: what runs now, how much waits, the last error (for /status)."""
        return {
            task_id: {
                "current": lane.current,
                "queued": len(lane.items),
                "failures": lane.failures,
                "last_error": lane.last_error,
            }
            for task_id, lane in self._lanes.items()
        }

    async def join(self) -> None:
        """Wait until every lane is empty (tests, graceful stop)."""
        while self._lanes:
            workers = [lane.worker for lane in self._lanes.values() if lane.worker]
            if not workers:
                return
            await asyncio.wait(workers)

    async def close(self) -> None:
        """Cancel every lane; unfinished work stays persisted and resumes at the next start."""
        self._closed = True
        workers = [lane.worker for lane in self._lanes.values() if lane.worker]
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        for lane in self._lanes.values():
            for item in lane.items:
                if not item.done.done():
                    item.done.cancel()
        self._lanes.clear()

"""The lease path of flow-controlled queues (docs/orbit/flow-control.md), inside the kernel's
lease transaction. A queue without settings never comes here: the kernel's fast path leases
it unchanged (the settings of every queue are re-read at most every `refresh_s`, one small
query, so that a change made on another server process applies within that time).

For a flow-controlled queue one lease asks, in its transaction: lock the queue's queue_flow
row (flow leases of a queue are serialised across processes), read the running tasks per
concurrency key (derived from the task rows: limits survive restarts and crashes), the
buckets and passes, the candidates without the keys at their limit; decide with
`agentcall.orbit.domain.flow.choose`; write the buckets and passes back. When the rate
refused a candidate, `wake(queue_id, seconds)` asks for a lease round when the next token is
due (no polling)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime

from agentcall.orbit.domain.flow import FlowCandidate, LeaseChoice, WaitingReason, choose
from agentcall.orbit.domain.flow_settings import FlowSettings, QueueFlow
from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.store import flow
from agentcall.orbit.store.connector import HotConnection, fetch
from agentcall.orbit.store.ports import Leasable

REFRESH_S = 1.0
WINDOW_FACTOR = 4  # candidates read per slot asked (keys at their limit are excluded in SQL)
MIN_WINDOW = 16


def candidate(found: Leasable) -> FlowCandidate:
    task = found.task
    return FlowCandidate(
        task.id,
        task.flow.priority,
        task.available_at,
        task.flow.concurrency_key,
        task.flow.fairness_key,
        task.flow.fairness_weight,
    )


class FlowControl:
    """`wake(queue_id, seconds)`: a lease round for the queue is wanted in `seconds`;
    `on_refused(reason, n)`: n candidates were passed over by a limit (a metric)."""

    def __init__(
        self,
        *,
        refresh_s: float = REFRESH_S,
        wake: Callable[[str, float], None] = lambda queue_id, seconds: None,
        on_refused: Callable[[WaitingReason, int], None] = lambda reason, n: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.refresh_s = refresh_s
        self.wake = wake
        self.on_refused = on_refused
        self.clock = clock
        self.book: dict[str, QueueFlow] = {}
        self._until = float("-inf")

    def controls(self, queue_id: str) -> bool:
        """The queue has flow settings (as last read): its leases take the flow path."""
        queue = self.book.get(queue_id)
        return queue is not None and queue.settings.active

    def changed(self, queue: QueueFlow) -> None:
        """A settings change committed in this process applies here at once."""
        self.book[queue.queue_id] = queue

    async def refresh(self, conn: HotConnection) -> None:
        """Re-read every queue's settings if the last read is older than `refresh_s`."""
        at = self.clock()
        if at >= self._until:
            self._until = at + self.refresh_s
            self.book = await flow.all_settings(conn)

    async def lease(
        self,
        conn: HotConnection,
        now: datetime | None,
        queue_id: str,
        handlers: Iterable[HandlerKey],
        size: int,
        taken: set[str],
    ) -> tuple[datetime, list[Leasable]] | None:
        """Up to `size` rows to lease from the queue under its settings, or None when its
        settings are gone (then the fast path leases it). `now` None: read the clock here."""
        queue = await flow.lock(conn, queue_id)
        if queue is None or not queue.settings.active:
            self.book.pop(queue_id, None)
            return None
        self.book[queue_id] = queue
        if now is None:
            now = (await fetch(conn, "now", {}))[0].now_at
            assert isinstance(now, datetime)
        settings = queue.settings
        state = await flow.state(conn, queue_id)
        blocked = _blocked(settings, state.running)
        window = max(MIN_WINDOW, size * WINDOW_FACTOR) + len(taken)
        found = await flow.candidates(
            conn, queue_id, handlers, now, window, blocked=blocked, fair=settings.fairness
        )
        rows = {row.task.id: row for row in found if row.task.id not in taken}
        choice = choose([candidate(row) for row in rows.values()], settings, state, now, size)
        await flow.write_back(conn, queue_id, choice, now)
        self._report(queue_id, choice, now)
        return now, [rows[task_id] for task_id in choice.chosen]

    def _report(self, queue_id: str, choice: LeaseChoice, now: datetime) -> None:
        for reason, count in choice.refused.items():
            self.on_refused(reason, count)
        if choice.wake_at is not None:
            self.wake(queue_id, max(0.0, (choice.wake_at - now).total_seconds()))


def _blocked(settings: FlowSettings, running: Mapping[str, int]) -> set[str]:
    return {
        key
        for key, count in running.items()
        if (limit := settings.limit_for(key)) is not None and count >= limit
    }


class Wakes:
    """Lease rounds asked for later (a rate limit's next token): one timer per queue, the
    earliest kept; `hinted(queue_ids)` is the hub's (`Hub.hinted`), bound at the first wake."""

    def __init__(self, hinted: Callable[[tuple[str, ...]], None] | None = None) -> None:
        self.hinted = hinted
        self._due: dict[str, tuple[float, asyncio.TimerHandle]] = {}

    def bind(self, hinted: Callable[[tuple[str, ...]], None]) -> None:
        self.hinted = hinted

    def later(self, queue_id: str, seconds: float) -> None:
        loop = asyncio.get_running_loop()
        at = loop.time() + seconds
        pending = self._due.get(queue_id)
        if pending is not None and pending[0] <= at and not pending[1].cancelled():
            return
        if pending is not None:
            pending[1].cancel()
        self._due[queue_id] = (at, loop.call_at(at, self._fire, queue_id))

    def _fire(self, queue_id: str) -> None:
        self._due.pop(queue_id, None)
        if self.hinted is not None:
            self.hinted((queue_id,))

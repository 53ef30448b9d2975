"""The lease path of flow-controlled queues (docs/orbit/flow-control.md), inside the kernel's
lease transaction. A queue without settings never comes here: the kernel's fast path leases
it unchanged (the settings of every queue are re-read at most every `refresh_s`, one small
query, so that a change made on another server process applies within that time).

For a flow-controlled queue one lease asks, in its transaction
(`agentcall.orbit.store.flow_round`): lock the queue's queue_flow row (flow leases of a queue
are serialised across processes) and read the clock, buckets and passes with it; read the
running tasks per concurrency key when the queue limits keys (derived from the task rows:
limits survive restarts and crashes); read the candidates without the keys at their limit
(with fairness the heads of every fairness key in one statement); decide with
`agentcall.orbit.domain.flow.choose`; write the buckets and passes back in one statement.
When the rate refused a candidate, `wake(queue_id, seconds)` asks for a lease round when the
next token is due (no polling)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import datetime

from agentcall.orbit.domain.flow import (
    VIRTUAL_PASS,
    FlowCandidate,
    FlowState,
    LeaseChoice,
    WaitingReason,
    choose,
)
from agentcall.orbit.domain.flow_settings import FlowSettings, QueueFlow
from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.domain.task import Task
from agentcall.orbit.store import flow, flow_round
from agentcall.orbit.store.connector import HotConnection
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
    """`wake(queue_id, seconds)`: a lease round for the queue is wanted in `seconds`.
    `refused[(queue_id, reason)]`: how many times a ready task of the queue was passed over by
    a limit in this process (the metrics read it when scraped; one dict update per lease
    round that refused, nothing on the fast path)."""

    def __init__(
        self,
        *,
        refresh_s: float = REFRESH_S,
        wake: Callable[[str, float], None] = lambda queue_id, seconds: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.refresh_s = refresh_s
        self.wake = wake
        self.clock = clock
        self.book: dict[str, QueueFlow] = {}
        self.refused: dict[tuple[str, WaitingReason], int] = {}
        # the fairness passes of the queues with fairness alone, kept by this process: all
        # it knows, and those changed since they were last written
        self.kept: dict[str, dict[str, int]] = {}
        self.dirty: dict[str, dict[str, int]] = {}
        self._flushed: dict[str, float] = {}
        # their fairness keys with WAITING tasks, and until when that read holds
        self.keys: dict[str, tuple[float, set[str | None]]] = {}
        # per fair queue, where the next page of its fairness keys starts (`fair_keys`)
        self.pages: dict[str, str | None] = {}
        self._until = float("-inf")

    def controlled(self) -> list[str]:
        """The queues with flow settings, as last read."""
        return sorted(q for q, flow_ in self.book.items() if flow_.settings.active)

    def controls(self, queue_id: str) -> bool:
        """The queue has flow settings (as last read): its leases take the flow path."""
        queue = self.book.get(queue_id)
        return queue is not None and queue.settings.active

    def limits(self, queue_id: str) -> bool:
        """The queue has a limit (running per key, rate), as last read: a task of it is leased
        by a lease round only. A queue with fairness alone may hand a submitted task to an idle
        worker (eager dispatch): its queue had nothing older ready, so it is that key's turn."""
        queue = self.book.get(queue_id)
        return queue is not None and queue.settings.limits

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
        known = self.book.get(queue_id)
        shared = known is not None and not known.settings.limits
        opened = await flow_round.open_round(conn, queue_id, locked=not shared)
        if opened is not None and shared and opened[0].settings.limits:
            shared = False  # a limit was set meanwhile: this round is serialised after all
            opened = await flow_round.open_round(conn, queue_id)
        if opened is None or not opened[0].settings.active:
            self.book.pop(queue_id, None)
            self.kept.pop(queue_id, None)
            self.keys.pop(queue_id, None)
            self.pages.pop(queue_id, None)
            return None
        queue, clock, state = opened
        self.book[queue_id] = queue
        now = clock if now is None else now
        settings = queue.settings
        if shared:
            return now, await self._lease_shared(conn, now, queue_id, handlers, size, taken, state)
        if settings.limits_keys:
            state = replace(state, running=await flow_round.running(conn, queue_id))
        blocked = _blocked(settings, state.running)
        keys: list[str | None] = []
        if settings.fairness:
            page = await flow_round.fair_keys(conn, queue_id, self.pages.get(queue_id))
            keys, self.pages[queue_id] = page.keys, page.after
        found = await flow_round.candidates(
            conn,
            queue_id,
            handlers,
            now,
            _window(settings, size, len(taken)),
            blocked=blocked,
            fair=settings.fairness,
            keys=keys,
        )
        rows = {row.task.id: row for row in found if row.task.id not in taken}
        choice = choose([candidate(row) for row in rows.values()], settings, state, now, size)
        await flow_round.write_back(conn, queue_id, choice, now)
        self._report(queue_id, choice, now)
        return now, [rows[task_id] for task_id in choice.chosen]

    async def _lease_shared(
        self,
        conn: HotConnection,
        now: datetime,
        queue_id: str,
        handlers: Iterable[HandlerKey],
        size: int,
        taken: set[str],
        state: FlowState,
    ) -> list[Leasable]:
        """A round of a queue with fairness alone, without the settings row's lock: the heads
        read unlocked, the choice made, then as many rows of each key as it takes claimed
        locked (a round beside it skips only rows being leased: FIFO within a key holds). The
        passes are this process's (`kept`, merged with the database's by maximum), written
        back at most every `refresh_s`."""
        settings = self.book[queue_id].settings
        window = size + len(taken)
        keys = await self._fair_keys(conn, queue_id)
        heads = await flow_round.candidates(
            conn, queue_id, handlers, now, window, blocked=(), fair=True, locked=False, keys=keys
        )
        keys.intersection_update(row.task.flow.fairness_key for row in heads)
        seen = [candidate(row) for row in heads if row.task.id not in taken]
        first = choose(seen, settings, self._passes(queue_id, state), now, size)
        key_of = {row.task.id: row.task.flow.fairness_key for row in heads}
        counts: dict[str | None, int] = {}
        for task_id in first.chosen:
            counts[key_of[task_id]] = counts.get(key_of[task_id], 0) + 1
        claimed = await flow_round.claims(conn, queue_id, handlers, now, counts)
        rows = {row.task.id: row for row in claimed if row.task.id not in taken}
        choice = choose(
            [candidate(r) for r in rows.values()],
            settings,
            self._passes(queue_id, state),
            now,
            size,
        )
        self._keep(queue_id, choice.passes)
        await self._flush(conn, queue_id, now)
        return [rows[task_id] for task_id in choice.chosen]

    async def _fair_keys(self, conn: HotConnection, queue_id: str) -> set[str | None]:
        """The queue's fairness keys with WAITING tasks as this process knows them: read from
        the database at most every `refresh_s` (a read that grows with the backlog), those of
        the tasks submitted here since added at once (`submitted`), those found without a
        ready task dropped until then."""
        at = self.clock()
        known = self.keys.get(queue_id)
        if known is None or at >= known[0]:
            page = await flow_round.fair_keys(conn, queue_id, self.pages.get(queue_id))
            self.pages[queue_id] = page.after
            known = (at + self.refresh_s, set(page.keys))
            self.keys[queue_id] = known
        return known[1]

    def submitted(self, tasks: Iterable[Task]) -> None:
        """Tasks were accepted here: their fairness keys take part in the next lease round."""
        for task in tasks:
            known = self.keys.get(task.queue_id)
            if known is not None:
                known[1].add(task.flow.fairness_key)

    def _passes(self, queue_id: str, state: FlowState) -> FlowState:
        """The state with the passes this process keeps merged in (the higher pass of each key)."""
        kept = self.kept.get(queue_id)
        if not kept:
            return state
        passes = dict(state.passes)
        for key, level in kept.items():
            passes[key] = max(level, passes.get(key, level))
        return replace(state, passes=passes)

    def _keep(self, queue_id: str, passes: Mapping[str, int]) -> None:
        self.kept.setdefault(queue_id, {}).update(passes)
        self.dirty.setdefault(queue_id, {}).update(passes)

    async def _flush(self, conn: HotConnection, queue_id: str, now: datetime) -> None:
        """The passes changed here since the last write, written if that is `refresh_s` ago;
        then the keys behind the queue's virtual time are forgotten (they start there anyway)."""
        at = self.clock()
        dirty = self.dirty.get(queue_id)
        if not dirty or at < self._flushed.get(queue_id, float("-inf")) + self.refresh_s:
            return
        self._flushed[queue_id] = at
        await flow_round.write_passes(conn, queue_id, dirty, now)
        self.dirty[queue_id] = {}
        kept = self.kept[queue_id]
        floor = kept.get(VIRTUAL_PASS, 0)
        for key in [k for k, level in kept.items() if level <= floor and k != VIRTUAL_PASS]:
            del kept[key]

    def _report(self, queue_id: str, choice: LeaseChoice, now: datetime) -> None:
        for reason, count in choice.refused.items():
            key = (queue_id, reason)
            self.refused[key] = self.refused.get(key, 0) + count
        if choice.wake_at is not None:
            self.wake(queue_id, max(0.0, (choice.wake_at - now).total_seconds()))


def _window(settings: FlowSettings, size: int, taken: int) -> int:
    """Candidates read (per fairness key, with fairness): a lease round takes at most `size`,
    so with fairness alone `size` per key is enough; a limit may pass some over, so with
    limits a wider window is read (keys already at their limit are excluded in SQL)."""
    if settings.fairness and settings.rate is None and not settings.limits_keys:
        return size + taken
    return max(MIN_WINDOW, size * WINDOW_FACTOR) + taken


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

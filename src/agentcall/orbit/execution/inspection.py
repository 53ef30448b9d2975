"""What the inspection API, the console and the metrics see: the token's queues with counts per
state, the age of their oldest WAITING task, how long their oldest ready task has been
available (a WAITING task whose `available_at` has come) and how many WAITING tasks are
scheduled for later, the namespace's connected workers with their queues' names (this
process's as they are now, the other server processes' as they last recorded them:
`agentcall.orbit.execution.worker_directory`), and waiting for a task to settle
(`agentcall.orbit.execution.waiters`).

Counts come from one grouped query over every queue, kept for `cache_s` seconds and shared by
every reader of this process (API, console, /metrics): their cost does not grow with the
number of viewers or scrapes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.times import format_time
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.domain.worker_directory import listing
from agentcall.orbit.execution.hub import Hub
from agentcall.orbit.execution.waiters import Waiters
from agentcall.orbit.execution.worker_directory import WorkerDirectory, local
from agentcall.orbit.store import inspect
from agentcall.orbit.store.db import Database

SETTLED = frozenset(TaskState(s) for s in inspect.SETTLED)


class TaskReader(Protocol):
    """How a waiter reads the task (the read use case, `agentcall.orbit.usecases.operations`)."""

    async def get(self, principal: Principal, task_id: str) -> Task: ...


MAX_WAIT_MS = 60_000


@dataclass(frozen=True, slots=True)
class Snapshot:
    taken: float  # monotonic
    counts: dict[str, dict[str, int]]  # queue_id -> state -> count
    oldest: dict[str, datetime]  # queue_id -> created_at of its oldest WAITING task
    names: dict[str, str]  # queue_id -> name
    availability: dict[str, inspect.Availability] = field(default_factory=dict)
    at: datetime = field(default_factory=lambda: datetime.now(UTC))  # when it was taken

    def oldest_ready(self, queue_id: str) -> datetime | None:
        """Since when the queue's oldest ready task has been available, at `at`."""
        return ready_since(self.availability.get(queue_id), self.at)

    def scheduled(self, queue_id: str) -> int:
        """The queue's WAITING tasks that become available only after `at`."""
        found = self.availability.get(queue_id)
        return 0 if found is None else found.scheduled


def ready_since(found: inspect.Availability | None, now: datetime) -> datetime | None:
    """The earliest `available_at` of a queue's WAITING tasks when it has come (that task is
    ready: leasing may hand it out), else None (nothing waits, or all of it is scheduled)."""
    if found is None or found.first_available_at > now:
        return None
    return found.first_available_at


@dataclass(frozen=True, slots=True)
class QueueView:
    id: str
    name: str
    counts: dict[str, int]
    oldest_waiting_at: datetime | None
    at: datetime = field(default_factory=lambda: datetime.now(UTC))
    oldest_ready_at: datetime | None = None  # the oldest ready task's available_at
    scheduled: int = 0  # WAITING tasks available only later

    @property
    def ready(self) -> int:
        """WAITING tasks available now."""
        return max(0, self.counts.get(TaskState.WAITING.value, 0) - self.scheduled)

    def age_ms(self, since: datetime | None) -> int | None:
        if since is None:
            return None
        return max(timedelta(0), self.at - since) // timedelta(milliseconds=1)

    def view(self) -> dict[str, JsonValue]:
        counts: dict[str, JsonValue] = {
            state.value: self.counts.get(state.value, 0) for state in TaskState
        }
        data: dict[str, JsonValue] = {"id": self.id, "name": self.name, "counts": counts}
        data["ready"], data["scheduled"] = self.ready, self.scheduled
        for key, since in (
            ("oldest_waiting", self.oldest_waiting_at),
            ("oldest_ready", self.oldest_ready_at),
        ):
            age = self.age_ms(since)
            if since is not None and age is not None:
                data[f"{key}_at"], data[f"{key}_age_ms"] = format_time(since), age
        return data


class Inspection:
    """`directory`: the other server processes' workers, where several share the database;
    None: this process is alone."""

    def __init__(
        self,
        db: Database,
        hub: Hub,
        waiters: Waiters,
        cache_s: float = 2.0,
        directory: WorkerDirectory | None = None,
    ) -> None:
        self.db = db
        self.hub = hub
        self.waiters = waiters
        self.cache_s = cache_s
        self._snapshot: Snapshot | None = None
        self._queue_names: dict[str, str] = {}  # shared by every snapshot: names never change
        self._lock = asyncio.Lock()
        self.directory = directory

    # ------------------------------------------------------------------ queues
    async def snapshot(self) -> Snapshot:
        """Counts of every queue, at most `cache_s` old (one refresh at a time)."""
        current = self._snapshot
        if current is not None and time.monotonic() - current.taken < self.cache_s:
            return current
        async with self._lock:
            current = self._snapshot
            if current is None or time.monotonic() - current.taken >= self.cache_s:
                current = self._snapshot = await self.db.retrying(self._take)
            return current

    async def _take(self) -> Snapshot:
        """One grouped query; queue names (which never change) are read once, and for new
        queues when a reader asks for them."""
        async with self.db.single_read() as conn:
            counts, oldest = await inspect.state_counts(conn)
            now = datetime.now(UTC)
            waiting = sorted(oldest)  # the queues with WAITING tasks
            availability = await inspect.availability(conn, waiting, now)
            if self._snapshot is None:
                self._queue_names.update(await inspect.all_queues(conn))
        return Snapshot(time.monotonic(), counts, oldest, self._queue_names, availability, now)

    async def queues(self, principal: Principal) -> list[QueueView]:
        """The token's queues, by name."""
        principal.require(Permission.READ)
        snap = await self.snapshot()
        missing = [queue_id for queue_id in principal.queue_ids if queue_id not in snap.names]
        if missing:  # created since the snapshot: its name now, its counts at the next one
            snap.names.update(await self.db.retrying(lambda: self._names(missing)))
        now = datetime.now(UTC)
        views = [
            QueueView(
                queue_id,
                snap.names.get(queue_id, ""),
                snap.counts.get(queue_id, {}),
                snap.oldest.get(queue_id),
                now,
                snap.oldest_ready(queue_id),
                snap.scheduled(queue_id),
            )
            for queue_id in principal.queue_ids
        ]
        return sorted(views, key=lambda view: (view.name, view.id))

    async def _names(self, queue_ids: Sequence[str]) -> dict[str, str]:
        async with self.db.single_read() as conn:
            return await inspect.queue_names(conn, queue_ids)

    # ------------------------------------------------------------------ workers
    async def workers(self, principal: Principal) -> list[dict[str, JsonValue]]:
        """The namespace's workers, of every server process, that serve the token's queues
        (only those queues are shown)."""
        principal.require(Permission.READ)
        records = local(self.hub)
        if self.directory is not None:
            records += await self.directory.others(principal.namespace_id)
        views = listing(records, principal.namespace_id, principal.queue_ids)
        names = {view.id: view.name for view in await self.queues(principal)}
        for view in views:
            shown = view["queues"]
            assert isinstance(shown, list)
            view["queue_names"] = [names.get(str(queue_id), "") for queue_id in shown]
        return views

    # ------------------------------------------------------------------ waiting
    async def wait(
        self,
        ops: TaskReader,
        principal: Principal,
        task_id: str,
        wait_ms: int,
        gone: asyncio.Future[None] | None = None,
    ) -> Task:
        """The task once it is settled (SUCCEEDED, FAILED, CANCELLED, NEEDS_REVIEW), or as
        last read when `wait_ms` runs out, when `gone` is done (the caller left) or when the
        server drains. Reads: one, plus one per wake-up."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_ms / 1000
        with self.waiters.watch(task_id) as watch:
            if gone is not None:
                gone.add_done_callback(lambda _: watch.stop())
            task = await ops.get(principal, task_id)
            while task.state not in SETTLED and (left := deadline - loop.time()) > 0:
                if watch.stopped:
                    break
                if await watch.woken(left) and not watch.stopped:
                    task = await ops.get(principal, task_id)
        return task


async def settled_among(db: Database, task_ids: Sequence[str]) -> set[str]:
    """The waiters' shared check: one query for every waited task."""
    async with db.single_read() as conn:
        return await inspect.settled_among(conn, task_ids)

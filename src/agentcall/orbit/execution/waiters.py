"""Waiting for a task to settle (`GET /v1/tasks/{id}?wait_ms=`, `client.wait`) without a
polling loop per waiter: a waiter parks on an event keyed by its task ID. It is woken

- by this process's own completion path (`wake(task_id)` after a worker's result, an
  operator's cancel or resolve is committed here), at once;
- by one shared check for all waiters of the process (`check(ids)`: one query naming every
  waited task, about once a second, only while someone waits) for tasks settled by other
  server processes or by the sweeper.

A woken waiter reads its task again; a waiter whose time ran out answers with the task as it
last read it. A waiter also ends at once, answering with the task as last read, when its
caller stops it (the HTTP client went away) or when the server begins to shut down
(`drain`: nobody's wait holds up a graceful stop, and no wait is cancelled mid-query)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence

log = logging.getLogger("orbit.waiters")
Check = Callable[[Sequence[str]], Awaitable[set[str]]]
CHECK_CHUNK = 500


class Waiters:
    def __init__(
        self, check: Check, every_s: float = 1.0, on_failure: Callable[[], None] = lambda: None
    ) -> None:
        self._check = check
        self.on_failure = on_failure  # a metric: failed shared checks
        self.every_s = every_s
        self._events: dict[str, set[Watch]] = {}
        self._task: asyncio.Task[None] | None = None
        self.checks = 0  # shared checks run (a test counts them)
        self.draining = False

    @property
    def waiting(self) -> int:
        return sum(len(events) for events in self._events.values())

    @contextlib.contextmanager
    def watch(self, task_id: str) -> Iterator[Watch]:
        """Be woken for `task_id` while inside: watch first, then read the task, so that a
        change committed between the read and the wait is not missed."""
        watch = Watch()
        if self.draining:
            watch.stop()
        self._events.setdefault(task_id, set()).add(watch)
        try:
            yield watch
        finally:
            events = self._events.get(task_id)
            if events is not None:
                events.discard(watch)
                if not events:
                    del self._events[task_id]

    def wake(self, task_id: str) -> None:
        for watch in self._events.get(task_id, ()):
            watch.event.set()

    def drain(self) -> None:
        """The server is shutting down: every wait, and every wait that starts from now on,
        ends at once with its task as last read. Every open connection calls it at the
        stop; the first call ends the waits there are, the flag ends those that start later."""
        if self.draining:
            return
        self.draining = True
        for events in list(self._events.values()):
            for watch in list(events):
                watch.stop()

    def start(self) -> None:
        self._task = asyncio.create_task(self._check_forever(), name="orbit-waiters")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _check_forever(self) -> None:
        while True:
            await asyncio.sleep(self.every_s)
            if self._events:
                try:
                    await self.check_once()
                except Exception:  # noqa: BLE001 - the next round tries again
                    self.on_failure()
                    log.warning("waiters' shared check failed; retrying", exc_info=True)

    async def check_once(self) -> None:
        """One shared check (a query per 500 waited tasks), waking the settled ones."""
        ids = sorted(self._events)
        self.checks += 1
        for start in range(0, len(ids), CHECK_CHUNK):
            for task_id in await self._check(ids[start : start + CHECK_CHUNK]):
                self.wake(task_id)


class Watch:
    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.stopped = False  # the wait must end now (client gone, server draining)

    def stop(self) -> None:
        self.stopped = True
        self.event.set()

    async def woken(self, timeout_s: float) -> bool:
        """True when woken within `timeout_s` (and ready to be woken again), else False."""
        try:
            async with asyncio.timeout(timeout_s):
                await self.event.wait()
        except TimeoutError:
            return False
        self.event.clear()
        return True

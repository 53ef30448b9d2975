"""The bulk operation runner of one server process (docs/orbit/bulk.md): it claims
a running operation that no live process holds (`claim_next`), runs its batches
(`run_batch`) until it finishes, is cancelled or its claim is lost, then looks for the next.
Woken at once when this process starts one (`wake`), otherwise it looks every `poll_s`: an
operation started by another process, or left by a process that died (its claim lapses after
`ORBIT_BULK_CLAIM_MS`), is picked up within that time. A failing batch (the database is
unreachable) is logged and tried again after `poll_s`, under the same claim; its writes that
committed replay. At a graceful stop the claim is given back, so another process goes on at
once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from agentcall.orbit.store.bulk_ports import BulkStore
from agentcall.orbit.store.ports import TaskStore
from agentcall.orbit.usecases.bulk_batch import Step, claim_next, release_claim, run_batch

log = logging.getLogger("orbit.bulk")
DEFAULT_POLL_S = 1.0
RELEASE_TIMEOUT_S = 2.0


class BulkRunner:
    def __init__(
        self,
        bulks: BulkStore,
        store: TaskStore,
        parallel: int,
        server_id: str,
        claim_s: float,
        *,
        poll_s: float = DEFAULT_POLL_S,
        wake: Callable[[str], None] = lambda queue_id: None,
        tell_cancel: Callable[[str], None] = lambda attempt_id: None,
        changed: Callable[[str], None] = lambda task_id: None,
    ) -> None:
        self.bulks = bulks
        self.store = store
        self.server_id = server_id
        self.claim_s = claim_s
        self.poll_s = poll_s
        self.hooks = (wake, tell_cancel, changed)
        self.parallel = parallel
        self.current: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    def wake(self) -> None:
        self._wake.set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="orbit-bulk-runner")

    async def stop(self) -> None:
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        if self.current is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(RELEASE_TIMEOUT_S):
                    await release_claim(self.bulks, self.current, self.server_id)

    async def _run(self) -> None:
        while True:
            try:
                ran = await self.round()
            except Exception:
                log.exception("a bulk operation batch failed; trying again")
                ran = False
            if not ran:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.poll_s):
                        await self._wake.wait()

    async def round(self) -> bool:
        """Run one operation to its end (or the loss of its claim); False: none to run."""
        if self.current is None:
            self.current = await claim_next(self.bulks, self.server_id, self.claim_s)
        if self.current is None:
            return False
        while True:
            step = await run_batch(
                self.bulks, self.store, self.current, self.server_id, self.claim_s, self.parallel
            )
            self._tell(step)
            if step.stop:
                self.current = None
                return True

    def _tell(self, step: Step) -> None:
        wake, tell_cancel, changed = self.hooks
        if step.woke and step.queue_id is not None:
            wake(step.queue_id)
        for attempt_id in step.tell_worker:
            tell_cancel(attempt_id)
        for task_id in step.changed:
            changed(task_id)

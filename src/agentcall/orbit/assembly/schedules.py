"""The schedule runner of one server process (docs/orbit/schedules.md): a named asyncio task
that fires what is due (`agentcall.orbit.usecases.schedule_due`) and sleeps until the
earliest due time, at most `MAX_SLEEP_S` (schedules created or changed in another process
are found within it), or until `wake()` (a change in this process). Every `orbit serve`
process runs one; the claims share the work. Its metrics: `orbit_schedule_firings_total`
by outcome and `orbit_schedule_firing_lag_seconds`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Histogram

from agentcall.orbit.domain.schedule_plan import FiringOutcome
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.schedule_claim_ports import Claimed
from agentcall.orbit.store.schedule_claims import SqlScheduleClaims
from agentcall.orbit.usecases.operations import Operations
from agentcall.orbit.usecases.schedule_due import DueSchedules, FiringHooks

log = logging.getLogger("orbit.schedules")
MAX_SLEEP_S = 1.0
MIN_SLEEP_S = 0.005  # between two empty claims while something is due (another process won)
ERROR_SLEEP_S = 2.0
# after a pass that was not full, the next waits this long: the slots due meanwhile are
# fired together, so a pass's fixed cost (claim, finish) is shared by many slots (adds at
# most this much firing lag)
PASS_GAP_S = 0.1
BATCHES_AT_ONCE = 2  # claimed batches firing at once in one process
LAG_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)


class ScheduleMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.firings = Counter(
            "orbit_schedule_firings",
            "Schedule firings by outcome (missed: the slots recorded as missed)",
            ["outcome"],
            registry=registry,
        )
        for outcome in FiringOutcome:
            self.firings.labels(outcome.value)
        self.lag = Histogram(
            "orbit_schedule_firing_lag_seconds",
            "Actual minus nominal time of fired schedule slots (jitter not counted)",
            registry=registry,
            buckets=LAG_BUCKETS,
        )

    def counted(self, outcome: str, n: int = 1) -> None:
        """Count `n` firings of `outcome` (the trigger and backfill routes count theirs)."""
        self.firings.labels(outcome).inc(n)


class ScheduleRunner:
    """Claims a batch, then fires it in a task of its own while it claims the next one if
    the batch was full (at most `BATCHES_AT_ONCE` batches fire at once), so a burst of due
    slots is claimed in a few round trips and fired by several batches together."""

    def __init__(self, due: DueSchedules) -> None:
        self.due = due
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._full = False  # the last round claimed a full batch
        self._free = asyncio.Semaphore(BATCHES_AT_ONCE)
        self._firing: set[asyncio.Task[None]] = set()
        self._asleep_until = 0.0  # monotonic end of the current sleep (0: awake)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="orbit-schedules")

    def wake(self) -> None:
        """A schedule changed in this process: look at once."""
        self._wake.set()

    async def stop(self) -> None:
        tasks = [*self._firing, *([self._task] if self._task is not None else [])]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._task = None

    async def _run(self) -> None:
        while True:
            try:
                delay = await self._round()
            except Exception:
                log.exception("firing due schedules failed; trying again in %.0f s", ERROR_SLEEP_S)
                delay = ERROR_SLEEP_S
            if delay > 0:
                self._asleep_until = time.monotonic() + delay
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self._wake.wait()
                self._asleep_until = 0.0
            self._wake.clear()

    async def _round(self) -> float:
        """Claim what is due and start firing it; the seconds until the next look (0: at
        once). While nothing is due a round is one indexed MIN query (`earliest_due`), no
        claim attempt; right after a full batch it claims again at once without asking
        (more is due)."""
        if not self._full:
            now, earliest = await self.due.earliest_due()
            if earliest is None:
                return MAX_SLEEP_S
            if earliest > now:
                return min(MAX_SLEEP_S, max(MIN_SLEEP_S, (earliest - now).total_seconds()))
        await self._free.acquire()
        try:
            claimed = await self.due.claim()
        except BaseException:
            self._free.release()
            raise
        count = len(claimed.rows)
        self._full = count >= self.due.batch
        if not count:
            self._free.release()
            return MIN_SLEEP_S  # due but claimed meanwhile by another process
        task = asyncio.create_task(self._fire(claimed), name="orbit-schedule-batch")
        self._firing.add(task)
        task.add_done_callback(self._firing.discard)
        return 0.0 if self._full else PASS_GAP_S

    async def _fire(self, claimed: Claimed) -> None:
        try:
            await self.due.fire(claimed)
        except Exception:  # its claims lapse after their lease; another round fires them
            log.exception("firing a batch of %d schedules failed", len(claimed.rows))
        finally:
            self._free.release()
            # while the batch was claimed nothing told when its schedules are next due, so
            # a runner asleep for longer than a pass gap looks again now that it does
            if self._asleep_until - time.monotonic() > PASS_GAP_S:
                self._wake.set()


def schedule_runner(
    db: Database, ops: Operations, metrics: ScheduleMetrics, tell_cancel: Callable[[str], None]
) -> ScheduleRunner:
    """The runner of this process over `db`, submitting through `ops`; `tell_cancel` tells
    a worker that `cancel_previous` cancelled its running task."""
    hooks = FiringHooks(metrics.counted, metrics.lag.observe, tell_cancel)
    due = DueSchedules(SqlScheduleClaims(db), ops.store, ops.submits.submit_all, hooks)
    return ScheduleRunner(due)

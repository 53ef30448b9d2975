"""Fire what is due (docs/orbit/schedules.md): claim a batch of due schedules, run one pass
over each (`agentcall.orbit.domain.schedule_pass`: catch-up within the window, missed beyond
it, the overlap policy against the previous firing's task, jitter), submit their slots
through the ordinary submit with the slots' keys, then write the firing records and release
the claims in one transaction.

Any number of server processes may run it at once: a schedule is claimed by one of them at
a time (a conditional UPDATE, `agentcall.orbit.store.schedule_claim_ports`), and a slot
fired twice anyway (a process killed after its submit, whose claim then expired) gives one
task, the second firing `deduplicated`."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from agentcall.orbit.domain.cancel import CancelRequest
from agentcall.orbit.domain.errors import OrbitError
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.schedule_pass import PassPlan, plan_pass
from agentcall.orbit.domain.schedule_plan import (
    FiringKind,
    FiringOutcome,
    OverlapAction,
    OverlapPolicy,
    jitter,
)
from agentcall.orbit.domain.schedule_records import FiringRow, ScheduleRow
from agentcall.orbit.domain.schedule_request import parse_spec
from agentcall.orbit.domain.strictjson import read_json
from agentcall.orbit.domain.times import format_time
from agentcall.orbit.store.ports import TaskStore
from agentcall.orbit.store.schedule_claim_ports import Release, ScheduleClaims
from agentcall.orbit.usecases.cancel import cancel_task
from agentcall.orbit.usecases.schedule_firing import (
    Slot,
    Submit,
    firing_of,
    schedule_principal,
    submit_slot,
)

log = logging.getLogger("orbit.schedules")
DEFAULT_BATCH = 100
# schedules of a batch fired at once: their submits arrive together, so the submit groups
# (`agentcall.orbit.store.submit_group`) write a batch of slots in a few transactions
CONCURRENCY = DEFAULT_BATCH
DEFAULT_LEASE = timedelta(seconds=10)
RETRY_AFTER = timedelta(seconds=5)  # a schedule whose pass failed is looked at again then


@dataclass(frozen=True, slots=True)
class FiringHooks:
    """`counted(outcome, n)`: firings by outcome (slots for `missed`); `lag(seconds)`: a
    fired slot's actual − nominal time (its jitter not counted); `cancel_told(attempt_id)`:
    a running task cancelled by `cancel_previous` whose worker is to be told."""

    counted: Callable[[str, int], None] = lambda outcome, n: None
    lag: Callable[[float], None] = lambda seconds: None
    cancel_told: Callable[[str], None] = lambda attempt_id: None


@dataclass
class _Pass:
    row: ScheduleRow
    now: datetime
    started: float
    last_task_id: str | None
    firings: list[FiringRow] = field(default_factory=list)


class DueSchedules:
    """`fire_due()` handles one batch; the caller loops (`agentcall.orbit.assembly`)."""

    def __init__(
        self,
        claims: ScheduleClaims,
        tasks: TaskStore,
        submit: Submit,
        hooks: FiringHooks | None = None,
        *,
        batch: int = DEFAULT_BATCH,
        lease: timedelta = DEFAULT_LEASE,
    ) -> None:
        self.claims = claims
        self.tasks = tasks
        self.submit = submit
        self.hooks = hooks or FiringHooks()
        self.batch = batch
        self.lease = lease

    async def fire_due(self) -> int:
        """Claim and fire one batch; how many schedules it claimed."""
        claimed = await self.claims.claim_due(self.batch, self.lease)
        if not claimed.rows:
            return 0
        started = time.monotonic()
        passes = [_Pass(row, claimed.now, started, row.last_task_id) for row in claimed.rows]
        gate = asyncio.Semaphore(CONCURRENCY)

        async def run(one: _Pass) -> Release:
            async with gate:
                return await self._run(one)

        results = await asyncio.gather(*(run(one) for one in passes))
        firings = [firing for one in passes for firing in one.firings]
        await self.claims.finish(firings, results)
        return len(passes)

    async def earliest_due(self) -> tuple[datetime, datetime | None]:
        return await self.claims.earliest_due()

    async def _run(self, one: _Pass) -> Release:
        row = one.row
        try:
            spec = parse_spec(read_json(row.spec_text.encode()), one.now).spec
            plan = plan_pass(row, spec, one.now, await self._running(row))
            await self._apply(one, plan)
        except (OrbitError, ValueError, KeyError) as exc:
            log.warning(
                "schedule %s not fired: %s; tried again in %.0f s",
                row.id,
                exc,
                RETRY_AFTER.total_seconds(),
            )
            one.firings.clear()
            retry_at = one.now + RETRY_AFTER
            return _release(row, row.next_fire_at, row.last_task_id, row.buffered_at, retry_at)
        return _release(row, plan.next_fire_at, one.last_task_id, plan.buffered_at, plan.hold_until)

    async def _running(self, row: ScheduleRow) -> bool:
        """Whether the previous firing's task is unfinished (read only when it matters)."""
        if row.overlap == OverlapPolicy.ALLOW.value or row.last_task_id is None:
            return False
        task = await self.tasks.load_task(row.last_task_id)
        return task is not None and not task.state.terminal

    async def _apply(self, one: _Pass, plan: PassPlan) -> None:
        row, counted = one.row, self.hooks.counted
        if plan.missed and plan.missed_first is not None:
            one.firings.append(_unfired(row, plan.missed_first, one.now, "missed", plan.missed))
            counted(FiringOutcome.MISSED.value, plan.missed)
        for step in plan.steps:
            if step.action is OverlapAction.SKIP:
                one.firings.append(_unfired(row, step.nominal_at, one.now, "skipped_overlap"))
                counted(FiringOutcome.SKIPPED_OVERLAP.value, 1)
                continue
            if step.action is OverlapAction.CANCEL_PREVIOUS and one.last_task_id:
                await self._cancel(row, one.last_task_id, step.nominal_at)
            await self._fire(one, step.nominal_at)

    async def _fire(self, one: _Pass, nominal_at: datetime) -> None:
        slot = Slot(one.row, FiringKind.SCHEDULED, nominal_at)
        submitted = await submit_slot(self.submit, slot, new_id())
        fired_at = one.now + timedelta(seconds=time.monotonic() - one.started)
        one.firings.append(firing_of(slot, submitted, fired_at))
        one.last_task_id = submitted.task_id
        self.hooks.counted(FiringOutcome.FIRED.value, 1)
        due_at = nominal_at + jitter(one.row.id, nominal_at, one.row.jitter_ms)
        self.hooks.lag(max(0.0, (fired_at - due_at).total_seconds()))

    async def _cancel(self, row: ScheduleRow, task_id: str, nominal_at: datetime) -> None:
        """Ask the previous firing's task to cancel before the slot fires (a task that
        ended meanwhile is left as it is)."""
        task = await self.tasks.load_task(task_id)
        if task is None or task.state.terminal:
            return
        reason = f"schedule {row.id}: cancel_previous for the slot {format_time(nominal_at)}"
        request = CancelRequest(task.revision, reason)
        key = f"schedule:{row.id}:cancel:{format_time(nominal_at)}"
        try:
            written = await cancel_task(
                self.tasks, schedule_principal(row), task_id, request, key, new_id()
            )
        except OrbitError as exc:  # finished or changed meanwhile: fire anyway
            log.info("schedule %s: previous task %s not cancelled: %s", row.id, task_id, exc)
            return
        if written.tell_worker is not None:
            self.hooks.cancel_told(written.tell_worker)


def _unfired(
    row: ScheduleRow, nominal_at: datetime, now: datetime, outcome: str, slots: int = 1
) -> FiringRow:
    kind = FiringKind.SCHEDULED.value
    return FiringRow(new_id(), row.id, nominal_at, now, kind, outcome, None, False, slots)


def _release(
    row: ScheduleRow,
    next_fire_at: datetime | None,
    last_task_id: str | None,
    buffered_at: datetime | None,
    hold_until: datetime | None,
) -> Release:
    assert row.claimed_by is not None  # claimed rows carry their claim's token
    return Release(
        row.id, row.claimed_by, row.revision, next_fire_at, last_task_id, buffered_at, hold_until
    )

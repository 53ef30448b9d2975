"""Fire what is due (docs/orbit/schedules.md): claim a batch of due schedules, plan one pass
over each (`agentcall.orbit.domain.schedule_pass`: catch-up within the window, missed beyond
it, the overlap policy against the previous firing's task, jitter), submit the slots of the
whole batch together through the ordinary submit with the slots' keys (one group
transaction for up to a thousand, `Submits.submit_all`), then write the firing records and
release the claims in one transaction.

The slots of a pass (more than one in a catch-up) are submitted in order with those of the
other passes, the oldest slots of the batch first, except that a `cancel_previous` slot
waits for a round of its own: the previous slot's task is submitted, then cancelled, then
the slot submitted.

Any number of server processes may run it at once: a schedule is claimed by one of them at
a time (`agentcall.orbit.store.schedule_claim_ports`), and a slot fired twice anyway (a
process killed after its submit, whose claim then expired) gives one task, the second
firing `deduplicated`."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from agentcall.orbit.domain.cancel import CancelRequest
from agentcall.orbit.domain.errors import OrbitError
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.schedule_pass import PassPlan, Step, plan_pass
from agentcall.orbit.domain.schedule_plan import (
    FiringKind,
    FiringOutcome,
    OverlapAction,
    OverlapPolicy,
    jitter,
)
from agentcall.orbit.domain.schedule_records import FiringRow, ScheduleRow
from agentcall.orbit.domain.schedule_request import parse_spec
from agentcall.orbit.domain.schedules import Spec
from agentcall.orbit.domain.strictjson import read_json
from agentcall.orbit.domain.times import format_time
from agentcall.orbit.domain.tokens import Principal
from agentcall.orbit.store.ports import TaskStore
from agentcall.orbit.store.schedule_claim_ports import Claimed, Release, ScheduleClaims
from agentcall.orbit.usecases.cancel import cancel_task
from agentcall.orbit.usecases.schedule_firing import (
    Slot,
    SubmitAll,
    firing_of,
    schedule_principal,
    slot_key,
    submitted_of,
    template_request,
)

log = logging.getLogger("orbit.schedules")
DEFAULT_BATCH = 250
# slots submitted together (one group transaction); a catch-up of many slots goes in
# several, the oldest slots first
SUBMITS_AT_ONCE = 500
READS_AT_ONCE = 16  # reads of previous tasks (overlap) and cancels in flight per batch
DEFAULT_LEASE = timedelta(seconds=10)
RETRY_AFTER = timedelta(seconds=5)  # a schedule whose pass failed is looked at again then
_FAILURES = (OrbitError, ValueError, KeyError)  # a pass that meets one is retried later


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
    last_task_id: str | None
    plan: PassPlan | None = None  # None: the pass failed (retried after RETRY_AFTER)
    rounds: list[list[Step]] = field(default_factory=list)  # the slots to submit, in order
    firings: list[FiringRow] = field(default_factory=list)

    def fail(self, exc: BaseException) -> None:
        log.warning(
            "schedule %s not fired: %s; tried again in %.0f s",
            self.row.id,
            exc,
            RETRY_AFTER.total_seconds(),
        )
        self.plan = None
        self.firings.clear()


class DueSchedules:
    """`fire_due()` handles one batch (`claim()`, then `fire()`); the caller loops
    (`agentcall.orbit.assembly.schedules`)."""

    def __init__(
        self,
        claims: ScheduleClaims,
        tasks: TaskStore,
        submit_all: SubmitAll,
        hooks: FiringHooks | None = None,
        *,
        batch: int = DEFAULT_BATCH,
        lease: timedelta = DEFAULT_LEASE,
    ) -> None:
        self.claims = claims
        self.tasks = tasks
        self.submit_all = submit_all
        self.hooks = hooks or FiringHooks()
        self.batch = batch
        self.lease = lease

    async def fire_due(self) -> int:
        """Claim and fire one batch; how many schedules it claimed."""
        claimed = await self.claim()
        await self.fire(claimed)
        return len(claimed.rows)

    async def claim(self) -> Claimed:
        """Claim a batch of due schedules (`fire` fires it)."""
        return await self.claims.claim_due(self.batch, self.lease)

    async def fire(self, claimed: Claimed) -> None:
        """Fire a claimed batch: its passes, their slots, then its records and releases."""
        if not claimed.rows:
            return
        started = time.monotonic()
        passes = [_Pass(row, claimed.now, row.last_task_id) for row in claimed.rows]
        running = await self._running([one.row for one in passes])
        for one in passes:
            previous = running.get(one.row.id, False)
            if isinstance(previous, BaseException):
                one.fail(previous)
            else:
                self._plan(one, previous)
        rounds = max((len(one.rounds) for one in passes), default=0)
        for index in range(rounds):
            due = [
                (one, step)
                for one in passes
                if one.plan is not None and len(one.rounds) > index
                for step in one.rounds[index]
            ]
            due.sort(key=lambda pair: pair[1].nominal_at)  # the oldest slots first
            for first in range(0, len(due), SUBMITS_AT_ONCE):
                await self._fire(due[first : first + SUBMITS_AT_ONCE], started)
        firings = [firing for one in passes for firing in one.firings]
        await self.claims.finish(firings, [_release(one) for one in passes])

    async def earliest_due(self) -> tuple[datetime, datetime | None]:
        return await self.claims.earliest_due()

    async def _running(self, rows: list[ScheduleRow]) -> dict[str, bool | BaseException]:
        """Whether each schedule's previous firing's task is unfinished, by schedule id,
        read only where the overlap policy asks (a failed read: its exception)."""
        wanted = [row for row in rows if row.overlap != OverlapPolicy.ALLOW.value]
        wanted = [row for row in wanted if row.last_task_id is not None]

        async def unfinished(row: ScheduleRow) -> bool:
            assert row.last_task_id is not None
            task = await self.tasks.load_task(row.last_task_id)
            return task is not None and not task.state.terminal

        answers = await _bounded(unfinished(row) for row in wanted)
        running: dict[str, bool | BaseException] = {}
        for row, answer in zip(wanted, answers, strict=True):
            if isinstance(answer, BaseException):
                if not isinstance(answer, _FAILURES):
                    raise answer
                running[row.id] = answer
            else:
                running[row.id] = answer is True
        return running

    def _plan(self, one: _Pass, previous_running: bool) -> None:
        row, counted = one.row, self.hooks.counted
        try:
            plan = plan_pass(row, _spec(row.spec_text), one.now, previous_running)
        except _FAILURES as exc:
            one.fail(exc)
            return
        one.plan, one.rounds = plan, _rounds(plan.fires)
        if plan.missed and plan.missed_first is not None:
            one.firings.append(_unfired(row, plan.missed_first, one.now, "missed", plan.missed))
            counted(FiringOutcome.MISSED.value, plan.missed)
        for step in plan.steps:
            if step.action is OverlapAction.SKIP:
                one.firings.append(_unfired(row, step.nominal_at, one.now, "skipped_overlap"))
                counted(FiringOutcome.SKIPPED_OVERLAP.value, 1)

    async def _fire(self, due: list[tuple[_Pass, Step]], started: float) -> None:
        """Slots of one round, submitted together in order (the previous tasks of
        `cancel_previous` slots cancelled first)."""
        if not due:
            return
        cancels = [
            (one, step)
            for one, step in due
            if step.action is OverlapAction.CANCEL_PREVIOUS and one.last_task_id is not None
        ]
        if cancels:
            await _bounded(self._cancel(one, step.nominal_at) for one, step in cancels)
        slots = [Slot(one.row, FiringKind.SCHEDULED, step.nominal_at) for one, step in due]
        principals: dict[str, Principal] = {}
        submits = [
            (_principal(principals, slot.schedule), template_request(slot.schedule),
             slot_key(slot), new_id())
            for slot in slots
        ]  # fmt: skip
        answers = await self.submit_all(submits)
        fired_at = due[0][0].now + timedelta(seconds=time.monotonic() - started)
        for (one, _), slot, answer in zip(due, slots, answers, strict=True):
            if one.plan is None:
                continue
            if isinstance(answer, BaseException):
                if not isinstance(answer, _FAILURES):
                    raise answer
                one.fail(answer)
                continue
            submitted = submitted_of(slot, answer)
            one.firings.append(firing_of(slot, submitted, fired_at))
            one.last_task_id = submitted.task_id
            self.hooks.counted(FiringOutcome.FIRED.value, 1)
            due_at = slot.nominal_at + jitter(one.row.id, slot.nominal_at, one.row.jitter_ms)
            self.hooks.lag(max(0.0, (fired_at - due_at).total_seconds()))

    async def _cancel(self, one: _Pass, nominal_at: datetime) -> None:
        """Ask the previous firing's task to cancel before the slot fires (a task that
        ended meanwhile is left as it is)."""
        row, task_id = one.row, one.last_task_id
        assert task_id is not None
        try:
            task = await self.tasks.load_task(task_id)
            if task is None or task.state.terminal:
                return
            reason = f"schedule {row.id}: cancel_previous for the slot {format_time(nominal_at)}"
            request = CancelRequest(task.revision, reason)
            key = f"schedule:{row.id}:cancel:{format_time(nominal_at)}"
            written = await cancel_task(
                self.tasks, schedule_principal(row), task_id, request, key, new_id()
            )
        except OrbitError as exc:  # finished or changed meanwhile: fire anyway
            log.info("schedule %s: previous task %s not cancelled: %s", row.id, task_id, exc)
            return
        if written.tell_worker is not None:
            self.hooks.cancel_told(written.tell_worker)


@lru_cache(maxsize=16384)
def _spec(text: str) -> Spec:
    """A stored spec, parsed once per text (its anchor is stored: no default applies)."""
    return parse_spec(read_json(text.encode()), _NO_DEFAULT).spec


_NO_DEFAULT = datetime(1970, 1, 1, tzinfo=UTC)  # stored specs always carry their anchor


def _rounds(fires: tuple[Step, ...]) -> list[list[Step]]:
    """A pass's slots in rounds: a slot that cancels the previous slot's task starts a new
    round (that task is submitted first); the others go with the slots before them."""
    rounds: list[list[Step]] = []
    for step in fires:
        if not rounds or step.action is OverlapAction.CANCEL_PREVIOUS:
            rounds.append([])
        rounds[-1].append(step)
    return rounds


def _principal(known: dict[str, Principal], row: ScheduleRow) -> Principal:
    principal = known.get(row.id)
    if principal is None:
        principal = known[row.id] = schedule_principal(row)
    return principal


async def _bounded(calls: Iterable[Awaitable[bool | None]]) -> list[bool | None | BaseException]:
    """The calls run `READS_AT_ONCE` at a time; their answers in order (an exception as
    itself)."""
    gate = asyncio.Semaphore(READS_AT_ONCE)

    async def one(call: Awaitable[bool | None]) -> bool | None:
        async with gate:
            return await call

    return list(await asyncio.gather(*(one(call) for call in calls), return_exceptions=True))


def _unfired(
    row: ScheduleRow, nominal_at: datetime, now: datetime, outcome: str, slots: int = 1
) -> FiringRow:
    kind = FiringKind.SCHEDULED.value
    return FiringRow(new_id(), row.id, nominal_at, now, kind, outcome, None, False, slots)


def _release(one: _Pass) -> Release:
    row, plan = one.row, one.plan
    assert row.claimed_by is not None  # claimed rows carry their claim's token
    if plan is None:  # failed: the schedule as it was, looked at again after RETRY_AFTER
        retry_at = one.now + RETRY_AFTER
        return Release(
            row.id, row.claimed_by, row.revision, row.next_fire_at, row.last_task_id,
            row.buffered_at, retry_at,
        )  # fmt: skip
    return Release(
        row.id, row.claimed_by, row.revision, plan.next_fire_at, one.last_task_id,
        plan.buffered_at, plan.hold_until,
    )  # fmt: skip

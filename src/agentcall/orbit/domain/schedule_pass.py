"""One pass over a claimed schedule at `now` (docs/orbit/schedules.md), as a pure function:
which slots fire, which are skipped for overlap, which are missed beyond the catch-up
window, which one `buffer_one` keeps, where the schedule's cursor (`next_fire_at`) goes, and
until when nobody needs to look at it again (`hold_until`: a jittered slot's firing time, or
the next look at a buffered slot's previous task).

The slots are taken in order, each under the overlap policy: a slot fired in this pass makes
the next one find its task unfinished (it was just submitted), so a catch-up with `skip`
fires the first slot and skips the rest. A slot whose jittered firing time has not come
stops the pass there: it stays the cursor."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from agentcall.orbit.domain.schedule_plan import (
    Bounds,
    OverlapAction,
    OverlapPolicy,
    jitter,
    next_in_bounds,
    overlap_action,
    plan_due,
)
from agentcall.orbit.domain.schedule_records import ScheduleRow
from agentcall.orbit.domain.schedules import Spec

MAX_SLOTS_PER_PASS = 20  # the rest of a long catch-up is planned in the next pass
BUFFER_POLL = timedelta(seconds=1)  # how often a buffered slot's previous task is looked at
_TICK = timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class Step:
    """FIRE, CANCEL_PREVIOUS (cancel the previous firing's task, then fire) or SKIP (record
    it `skipped_overlap`) for one nominal slot."""

    action: OverlapAction
    nominal_at: datetime


@dataclass(frozen=True, slots=True)
class PassPlan:
    steps: tuple[Step, ...]
    missed: int  # slots older than the catch-up window, recorded once as `missed`
    missed_first: datetime | None
    next_fire_at: datetime | None  # the first slot not handled (None: the schedule ended)
    buffered_at: datetime | None
    hold_until: datetime | None

    @property
    def fires(self) -> tuple[Step, ...]:
        return tuple(step for step in self.steps if step.action is not OverlapAction.SKIP)


@dataclass
class _Walk:
    running: bool
    buffered: datetime | None
    hold: datetime | None = None

    def hold_at(self, at: datetime) -> None:
        self.hold = at if self.hold is None else min(self.hold, at)


def plan_pass(
    row: ScheduleRow,
    spec: Spec,
    now: datetime,
    previous_running: bool,
    limit: int = MAX_SLOTS_PER_PASS,
) -> PassPlan:
    """What a pass at `now` does; `previous_running`: the previous firing's task
    (`row.last_task_id`) exists and is not terminal."""
    walk = _Walk(previous_running, row.buffered_at)
    steps: list[Step] = []
    if walk.buffered is not None:
        if walk.running:
            walk.hold_at(now + BUFFER_POLL)
        else:
            steps.append(Step(OverlapAction.FIRE, walk.buffered))
            walk.running, walk.buffered = True, None
    if row.next_fire_at is None:
        return PassPlan(tuple(steps), 0, None, None, walk.buffered, walk.hold)
    bounds = Bounds(row.start_at, row.end_at)
    catchup = timedelta(milliseconds=row.catchup_window_ms)
    due = plan_due(spec, row.next_fire_at - _TICK, now, bounds, catchup, limit)
    cursor = due.missed_last
    policy = OverlapPolicy(row.overlap)
    for slot in due.fire:
        fire_at = slot + jitter(row.id, slot, row.jitter_ms)
        if fire_at > now:
            walk.hold_at(fire_at)
            break
        steps.append(_step(policy, walk, slot, now))
        cursor = slot
    steps = [step for step in steps if step.action is not OverlapAction.BUFFER]
    following = row.next_fire_at if cursor is None else next_in_bounds(spec, cursor, bounds)
    return PassPlan(tuple(steps), due.missed, due.missed_first, following, walk.buffered, walk.hold)


def _step(policy: OverlapPolicy, walk: _Walk, slot: datetime, now: datetime) -> Step:
    action = overlap_action(policy, walk.running, walk.buffered is not None)
    if action is OverlapAction.BUFFER:
        walk.buffered = slot
        walk.hold_at(now + BUFFER_POLL)
    elif action is not OverlapAction.SKIP:
        walk.running = True
    return Step(action, slot)

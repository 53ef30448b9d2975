"""What a schedule does at `now` (docs/orbit/schedules.md), as pure functions: the slots
inside its start/end, each slot's jitter, which due slots fire and which are missed beyond
the catch-up window, and what the overlap policy says when the previous firing's task is
still running."""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from agentcall.orbit.domain.schedules import IntervalSpec, Spec, next_slot
from agentcall.orbit.domain.times import format_time

MAX_MISSED_COUNTED = 100_000
MAX_JITTER_MS = 3_600_000
MIN_CATCHUP_WINDOW_MS = 1000
MAX_CATCHUP_WINDOW_MS = 7 * 86_400_000
DEFAULT_CATCHUP_WINDOW_MS = 300_000


class OverlapPolicy(enum.StrEnum):
    ALLOW = "allow"  # fire whatever the previous task is doing
    SKIP = "skip"  # do not fire while the previous firing's task is not terminal
    BUFFER_ONE = "buffer_one"  # keep one slot, fire it when the previous task ends
    CANCEL_PREVIOUS = "cancel_previous"  # cancel the previous task, then fire


class OverlapAction(enum.StrEnum):
    FIRE = "fire"
    SKIP = "skip"
    BUFFER = "buffer"
    CANCEL_PREVIOUS = "cancel_previous"


class ScheduleState(enum.StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"


class FiringOutcome(enum.StrEnum):
    FIRED = "fired"
    SKIPPED_OVERLAP = "skipped_overlap"
    MISSED = "missed"
    BACKFILLED = "backfilled"
    TRIGGERED = "triggered"


class FiringKind(enum.StrEnum):
    SCHEDULED = "scheduled"
    TRIGGER = "trigger"
    BACKFILL = "backfill"


@dataclass(frozen=True, slots=True)
class Bounds:
    """Slots fall at or after `start_at` and strictly before `end_at` (None: unbounded)."""

    start_at: datetime | None = None
    end_at: datetime | None = None


def next_in_bounds(spec: Spec, after: datetime, bounds: Bounds) -> datetime | None:
    """The first slot strictly after `after` inside the bounds, or None when it has ended."""
    if bounds.start_at is not None and after < bounds.start_at:
        after = bounds.start_at - timedelta(microseconds=1)
    slot = next_slot(spec, after)
    if bounds.end_at is not None and slot >= bounds.end_at:
        return None
    return slot


def slots_between(
    spec: Spec, start: datetime, end: datetime, bounds: Bounds, limit: int
) -> list[datetime]:
    """The slots in [start, end) inside the bounds, at most `limit` of them."""
    found: list[datetime] = []
    current = start - timedelta(microseconds=1)
    while len(found) < limit:
        slot = next_in_bounds(spec, current, bounds)
        if slot is None or slot >= end:
            break
        found.append(slot)
        current = slot
    return found


def jitter(schedule_id: str, nominal_at: datetime, jitter_ms: int) -> timedelta:
    """A delay in [0, jitter_ms) fixed by the schedule and the slot, so every server
    process computes the same firing time."""
    if jitter_ms <= 0:
        return timedelta(0)
    digest = hashlib.sha256(f"{schedule_id}:{nominal_at.isoformat()}".encode()).digest()
    return timedelta(milliseconds=int.from_bytes(digest[:8], "big") % jitter_ms)


@dataclass(frozen=True, slots=True)
class DuePlan:
    """The slots after the cursor up to `now`: the ones to fire (in order), and the count
    and range of the ones older than the catch-up window; `cursor` is the last slot
    handled (None: nothing handled)."""

    fire: tuple[datetime, ...]
    missed: int
    missed_first: datetime | None
    missed_last: datetime | None
    cursor: datetime | None


def plan_due(
    spec: Spec,
    after: datetime,
    now: datetime,
    bounds: Bounds,
    catchup: timedelta,
    limit: int,
) -> DuePlan:
    """Which slots strictly after `after` are due at `now`: a slot older than `catchup` is
    missed; at most `limit` slots fire (the rest are planned next time)."""
    oldest = now - catchup
    missed, first, last = _missed(spec, after, oldest, bounds)
    cursor = last
    fire: list[datetime] = []
    current = after if last is None else last
    while len(fire) < limit:
        slot = next_in_bounds(spec, current, bounds)
        if slot is None or slot > now:
            break
        fire.append(slot)
        current = cursor = slot
    return DuePlan(tuple(fire), missed, first, last, cursor)


def _missed(
    spec: Spec, after: datetime, oldest: datetime, bounds: Bounds
) -> tuple[int, datetime | None, datetime | None]:
    """The slots strictly after `after` and strictly before `oldest`: count, first, last."""
    first = next_in_bounds(spec, after, bounds)
    if first is None or first >= oldest:
        return 0, None, None
    if isinstance(spec, IntervalSpec):
        last = _last_interval_before(spec, oldest, bounds)
        return (last - first) // spec.interval + 1, first, last
    count, last = 1, first
    while count < MAX_MISSED_COUNTED:
        slot = next_in_bounds(spec, last, bounds)
        if slot is None or slot >= oldest:
            return count, first, last
        count, last = count + 1, slot
    return count, first, last


def _last_interval_before(spec: IntervalSpec, oldest: datetime, bounds: Bounds) -> datetime:
    step = spec.interval
    last = spec.anchor_at + ((oldest - spec.anchor_at - timedelta(microseconds=1)) // step) * step
    while bounds.end_at is not None and last >= bounds.end_at:
        last -= step
    return last


def overlap_action(policy: OverlapPolicy, previous_running: bool, buffered: bool) -> OverlapAction:
    """What a due slot does when the previous firing's task is (not) terminal and a slot is
    (not) already buffered."""
    if not previous_running or policy is OverlapPolicy.ALLOW:
        return OverlapAction.FIRE
    if policy is OverlapPolicy.SKIP:
        return OverlapAction.SKIP
    if policy is OverlapPolicy.BUFFER_ONE:
        return OverlapAction.SKIP if buffered else OverlapAction.BUFFER
    return OverlapAction.CANCEL_PREVIOUS


def idempotency_key(schedule_id: str, nominal_at: datetime) -> str:
    """`schedule:<id>:<nominal time>`: the key of a slot's task, the same in every process."""
    return f"schedule:{schedule_id}:{format_time(nominal_at)}"

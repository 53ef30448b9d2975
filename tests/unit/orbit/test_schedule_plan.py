"""Schedule decisions at `now` (docs/orbit/schedules.md): start/end bounds, deterministic
jitter, due slots fired within the catch-up window and counted missed beyond it, the
overlap policies and the slot's idempotency key."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcall.orbit.domain.schedule_plan import (
    Bounds,
    OverlapAction,
    OverlapPolicy,
    idempotency_key,
    jitter,
    next_in_bounds,
    overlap_action,
    plan_due,
    slots_between,
)
from agentcall.orbit.domain.schedules import cron_spec, interval_spec

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
EVERY_SECOND = interval_spec(1000, T0)
EVERY_MINUTE = cron_spec("* * * * *")


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_slots_fall_at_or_after_start_and_strictly_before_end() -> None:
    bounds = Bounds(at(10), at(13))
    assert next_in_bounds(EVERY_SECOND, at(0), bounds) == at(10)
    assert slots_between(EVERY_SECOND, at(0), at(100), bounds, 10) == [at(10), at(11), at(12)]
    assert next_in_bounds(EVERY_SECOND, at(12), bounds) is None


def test_slots_between_is_bounded_by_its_limit_and_half_open() -> None:
    assert slots_between(EVERY_SECOND, at(5), at(8), Bounds(), 10) == [at(5), at(6), at(7)]
    assert slots_between(EVERY_SECOND, at(5), at(100), Bounds(), 2) == [at(5), at(6)]


def test_due_slots_inside_the_catch_up_window_fire_in_order() -> None:
    plan = plan_due(EVERY_SECOND, at(0), at(3.5), Bounds(), timedelta(seconds=60), 100)
    assert plan.fire == (at(1), at(2), at(3))
    assert plan.missed == 0 and plan.cursor == at(3)


def test_slots_older_than_the_catch_up_window_are_counted_missed_not_fired() -> None:
    plan = plan_due(EVERY_SECOND, at(0), at(100), Bounds(), timedelta(seconds=10), 100)
    assert (plan.missed, plan.missed_first, plan.missed_last) == (89, at(1), at(89))
    assert plan.fire == tuple(at(s) for s in range(90, 101))
    assert plan.cursor == at(100)


def test_missed_cron_slots_are_counted_one_by_one() -> None:
    plan = plan_due(EVERY_MINUTE, T0, at(600), Bounds(), timedelta(seconds=120), 100)
    assert plan.missed == 7 and plan.missed_first == at(60) and plan.missed_last == at(420)
    assert plan.fire == (at(480), at(540), at(600))


def test_a_plan_fires_at_most_its_limit_and_keeps_the_rest_for_later() -> None:
    plan = plan_due(EVERY_SECOND, at(0), at(10), Bounds(), timedelta(seconds=60), 4)
    assert plan.fire == (at(1), at(2), at(3), at(4)) and plan.cursor == at(4)


def test_nothing_due_leaves_the_cursor_alone() -> None:
    plan = plan_due(EVERY_SECOND, at(5), at(5.5), Bounds(), timedelta(seconds=60), 10)
    assert plan.fire == () and plan.missed == 0 and plan.cursor is None


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1000, 120_000),
    st.integers(0, 10_000),
    st.integers(0, 600_000),
    st.integers(0, 3_000_000),
)
def test_every_slot_up_to_now_is_either_fired_or_missed_once(
    interval_ms: int, after_ms: int, catchup_ms: int, now_ms: int
) -> None:
    spec = interval_spec(interval_ms, T0)
    after, now = T0 + timedelta(milliseconds=after_ms), T0 + timedelta(milliseconds=now_ms)
    plan = plan_due(spec, after, now, Bounds(), timedelta(milliseconds=catchup_ms), 10_000)
    every = slots_between(spec, after + timedelta(microseconds=1), now, Bounds(), 100_000)
    every += [now] if (now - T0) % timedelta(milliseconds=interval_ms) == timedelta(0) else []
    every = [slot for slot in every if slot > after]
    assert plan.missed + len(plan.fire) == len(every)
    assert list(plan.fire) == every[plan.missed :]
    assert all(now - slot <= timedelta(milliseconds=catchup_ms) for slot in plan.fire)


def test_jitter_is_fixed_by_schedule_and_slot_and_below_its_bound() -> None:
    one = jitter("a" * 32, T0, 5000)
    assert one == jitter("a" * 32, T0, 5000)
    assert timedelta(0) <= one < timedelta(seconds=5)
    spread = {jitter("a" * 32, at(s), 5000) for s in range(50)}
    assert len(spread) > 10
    assert jitter("a" * 32, T0, 0) == timedelta(0)


@pytest.mark.parametrize(
    ("policy", "running", "buffered", "action"),
    [
        (OverlapPolicy.ALLOW, True, False, OverlapAction.FIRE),
        (OverlapPolicy.SKIP, False, False, OverlapAction.FIRE),
        (OverlapPolicy.SKIP, True, False, OverlapAction.SKIP),
        (OverlapPolicy.BUFFER_ONE, True, False, OverlapAction.BUFFER),
        (OverlapPolicy.BUFFER_ONE, True, True, OverlapAction.SKIP),
        (OverlapPolicy.BUFFER_ONE, False, False, OverlapAction.FIRE),
        (OverlapPolicy.CANCEL_PREVIOUS, True, False, OverlapAction.CANCEL_PREVIOUS),
        (OverlapPolicy.CANCEL_PREVIOUS, False, False, OverlapAction.FIRE),
    ],
)
def test_overlap_policy_decides_what_a_due_slot_does(
    policy: OverlapPolicy, running: bool, buffered: bool, action: OverlapAction
) -> None:
    assert overlap_action(policy, running, buffered) is action


def test_a_slot_key_names_the_schedule_and_the_nominal_time() -> None:
    key = idempotency_key("0" * 32, at(1.5))
    assert key == "schedule:" + "0" * 32 + ":2026-12-01T12:00:01.5Z"

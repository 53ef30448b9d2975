"""One pass over a claimed schedule (agentcall.orbit.domain.schedule_pass), table-driven:
each overlap policy with the previous firing's task running or not, catch-up of the slots
within the window (each under the policy), slots beyond it counted once as missed, a
jittered slot held until its firing time, a buffered slot fired once its previous task
ended, and the cursor after the last slot handled."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentcall.orbit.domain.schedule_pass import BUFFER_POLL, PassPlan, plan_pass
from agentcall.orbit.domain.schedule_plan import OverlapAction, jitter
from agentcall.orbit.domain.schedule_records import ScheduleRow
from agentcall.orbit.domain.schedules import interval_spec

pytestmark = pytest.mark.unit

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
S = timedelta(seconds=1)
SPEC = interval_spec(10_000, T0)  # every 10 s from T0
FIRE, SKIP, CANCEL = OverlapAction.FIRE, OverlapAction.SKIP, OverlapAction.CANCEL_PREVIOUS


def row(
    overlap: str = "allow", next_fire_at: datetime | None = T0, **fields: object
) -> ScheduleRow:
    values: dict[str, object] = {
        "id": "a" * 32,
        "namespace_id": "b" * 32,
        "queue_id": "c" * 32,
        "revision": 1,
        "state": "active",
        "note": None,
        "template_text": "{}",
        "spec_text": "{}",
        "start_at": None,
        "end_at": None,
        "jitter_ms": 0,
        "catchup_window_ms": 300_000,
        "overlap": overlap,
        "next_fire_at": next_fire_at,
        "created_at": T0,
        "updated_at": T0,
        **fields,
    }
    return ScheduleRow(**values)  # type: ignore[arg-type]


def steps(plan: PassPlan) -> list[tuple[OverlapAction, datetime]]:
    return [(step.action, step.nominal_at) for step in plan.steps]


@pytest.mark.parametrize(
    ("overlap", "running", "expected"),
    [
        ("allow", True, [(FIRE, T0)]),
        ("allow", False, [(FIRE, T0)]),
        ("skip", True, [(SKIP, T0)]),
        ("skip", False, [(FIRE, T0)]),
        ("cancel_previous", True, [(CANCEL, T0)]),
        ("cancel_previous", False, [(FIRE, T0)]),
        ("buffer_one", False, [(FIRE, T0)]),
        ("buffer_one", True, []),
    ],
)
def test_a_due_slot_follows_the_overlap_policy(
    overlap: str, running: bool, expected: list[tuple[OverlapAction, datetime]]
) -> None:
    plan = plan_pass(row(overlap), SPEC, T0 + S, running)
    assert steps(plan) == expected
    assert plan.next_fire_at == T0 + 10 * S  # handled, whatever it did


def test_buffer_one_keeps_one_slot_and_looks_again_soon() -> None:
    plan = plan_pass(row("buffer_one"), SPEC, T0 + S, previous_running=True)
    assert (plan.buffered_at, plan.hold_until) == (T0, T0 + S + BUFFER_POLL)
    later = row("buffer_one", T0 + 10 * S, buffered_at=T0)
    still = plan_pass(later, SPEC, T0 + 11 * S, previous_running=True)
    assert steps(still) == [(SKIP, T0 + 10 * S)] and still.buffered_at == T0
    ended = plan_pass(later, SPEC, T0 + 11 * S, previous_running=False)
    assert steps(ended) == [(FIRE, T0)] and ended.buffered_at == T0 + 10 * S  # the next waits


def test_a_catch_up_fires_the_slots_of_the_window_each_under_the_policy() -> None:
    now = T0 + 35 * S
    allow = plan_pass(row("allow"), SPEC, now, previous_running=False)
    assert steps(allow) == [(FIRE, T0 + k * 10 * S) for k in range(4)]
    skip = plan_pass(row("skip"), SPEC, now, previous_running=False)
    assert steps(skip) == [(FIRE, T0)] + [(SKIP, T0 + k * 10 * S) for k in (1, 2, 3)]
    assert allow.next_fire_at == skip.next_fire_at == T0 + 40 * S


def test_slots_beyond_the_catch_up_window_are_counted_once_as_missed() -> None:
    plan = plan_pass(row(catchup_window_ms=20_000), SPEC, T0 + 65 * S, previous_running=False)
    assert (plan.missed, plan.missed_first) == (5, T0)  # T0 .. T0+40s are older than 20 s
    assert steps(plan) == [(FIRE, T0 + 50 * S), (FIRE, T0 + 60 * S)]
    assert plan.next_fire_at == T0 + 70 * S


def test_a_jittered_slot_waits_for_its_firing_time() -> None:
    jittered = row(jitter_ms=5_000)
    delay = jitter(jittered.id, T0, 5_000)
    early = plan_pass(jittered, SPEC, T0 + delay - timedelta(milliseconds=1), False)
    assert steps(early) == [] and early.next_fire_at == T0
    assert early.hold_until == T0 + delay
    on_time = plan_pass(jittered, SPEC, T0 + delay, False)
    assert steps(on_time) == [(FIRE, T0)] and on_time.next_fire_at == T0 + 10 * S


def test_nothing_due_changes_nothing_and_an_end_stops_the_cursor() -> None:
    idle = plan_pass(row(next_fire_at=T0 + 10 * S), SPEC, T0 + S, False)
    assert (steps(idle), idle.next_fire_at, idle.hold_until) == ([], T0 + 10 * S, None)
    last = plan_pass(row(end_at=T0 + 5 * S), SPEC, T0 + S, False)
    assert steps(last) == [(FIRE, T0)] and last.next_fire_at is None
    limited = plan_pass(row(), SPEC, T0 + 95 * S, False, limit=3)
    assert len(limited.steps) == 3 and limited.next_fire_at == T0 + 30 * S

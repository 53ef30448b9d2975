"""The lease choice of a flow-controlled queue (`agentcall.orbit.domain.flow.choose`) under
each rule and their combinations, as tables; then properties over random workloads: the
running count per key never exceeds its limit, no task is leased twice, every eligible task
is eventually leased."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcall.orbit.domain.flow import (
    QUEUE_BUCKET,
    STRIDE,
    Bucket,
    FlowCandidate,
    FlowState,
    WaitingReason,
    choose,
    refill,
    token_due,
)
from agentcall.orbit.domain.flow_settings import FlowSettings, KeyLimit, RateLimit
from agentcall.orbit.domain.lease_order import AGEING_STEP, starvation_horizon

T0 = datetime(2026, 1, 1, tzinfo=UTC)  # the round's `now`: every table candidate is ready
READY = T0 - timedelta(minutes=1)  # the readiness `at` counts from
STEP_S = AGEING_STEP.total_seconds()
FIFO = FlowSettings(max_running_per_key=1_000)  # active, but nothing limits the table below
FAIR = FlowSettings(fairness=True)


def c(
    task_id: str, at: int = 0, p: int = 5, ck: str | None = None, fk: str | None = None, w: int = 1
):
    return FlowCandidate(task_id, p, READY + timedelta(seconds=at), ck, fk, w)


CHOICES = [
    # (name, candidates, settings, state, slots, chosen)
    ("FIFO within a priority", [c("b", 2), c("a", 1)], FIFO, FlowState(), 2, ("a", "b")),
    ("higher priority first", [c("lo", 0, 3), c("hi", 9, 7)], FIFO, FlowState(), 1, ("hi",)),
    (
        "priority, then FIFO",
        [c("l1", 0, 1), c("h2", 2, 9), c("h1", 1, 9)],
        FIFO,
        FlowState(),
        3,
        ("h1", "h2", "l1"),
    ),
    (
        "concurrency: a key at its limit waits, others pass",
        [c("x1", 0, ck="x"), c("y1", 1, ck="y"), c("n", 2)],
        FlowSettings(max_running_per_key=2),
        FlowState(running={"x": 2}),
        3,
        ("y1", "n"),
    ),
    (
        "concurrency: the limit counts this round's leases too",
        [c("x1", 0, ck="x"), c("x2", 1, ck="x"), c("x3", 2, ck="x")],
        FlowSettings(max_running_per_key=2),
        FlowState(),
        3,
        ("x1", "x2"),
    ),
    (
        "concurrency: a key pattern overrides the queue default",
        [c("v1", 0, ck="vip:1"), c("v2", 1, ck="vip:1"), c("o1", 2, ck="o"), c("o2", 3, ck="o")],
        FlowSettings(max_running_per_key=1, key_limits=(KeyLimit("vip:*", 2),)),
        FlowState(),
        4,
        ("v1", "v2", "o1"),
    ),
    (
        "rate: the queue's bucket gives its burst, then nothing",
        [c("a", 0), c("b", 1), c("c", 2)],
        FlowSettings(rate=RateLimit(1, 2)),
        FlowState(),
        3,
        ("a", "b"),
    ),
    (
        "rate: an empty bucket leases nothing",
        [c("a", 0)],
        FlowSettings(rate=RateLimit(10, 5)),
        FlowState(buckets={QUEUE_BUCKET: Bucket(0.5, T0)}),
        1,
        (),
    ),
    (
        "rate per key: one key's empty bucket does not stop another",
        [c("x1", 0, ck="x"), c("y1", 1, ck="y")],
        FlowSettings(rate=RateLimit(1, 1, per_key=True)),
        FlowState(buckets={"x": Bucket(0.0, T0)}),
        2,
        ("y1",),
    ),
    (
        "fairness: round-robin over keys instead of FIFO",
        [c("a1", 0, fk="A"), c("a2", 1, fk="A"), c("a3", 2, fk="A"), c("b1", 3, fk="B")],
        FAIR,
        FlowState(),
        2,
        ("a1", "b1"),
    ),
    (
        "fairness: the key with the lower pass goes first",
        [c("a1", 0, fk="A"), c("b1", 5, fk="B")],
        FAIR,
        FlowState(passes={"A": 2 * STRIDE, "B": STRIDE}),
        1,
        ("b1",),
    ),
    (
        "fairness: a long-idle key starts at the floor, not with a burst",
        [c("a1", 0, fk="A"), c("a2", 1, fk="A"), c("b1", 2, fk="B"), c("b2", 3, fk="B")],
        FAIR,
        FlowState(passes={"": 9 * STRIDE, "A": 10 * STRIDE, "B": 0}),
        4,
        ("b1", "a1", "b2", "a2"),
    ),
    (
        "fairness by weight: weight 2 gets two leases for one",
        [c(f"a{i}", i, fk="A", w=2) for i in range(4)]
        + [c(f"b{i}", 10 + i, fk="B") for i in range(4)],
        FAIR,
        FlowState(),
        6,
        ("a0", "b0", "a1", "a2", "b1", "a3"),
    ),
    (
        "fairness only within a priority: higher priority still first",
        [c("a1", 0, 5, fk="A"), c("b1", 9, 8, fk="B"), c("b2", 10, 8, fk="B")],
        FAIR,
        FlowState(),
        2,
        ("b1", "b2"),
    ),
    (
        "ageing: within its head start the higher priority goes first",
        [c("p5", -(4 * STEP_S - 1), 5), c("p9", 0, 9)],
        FIFO,
        FlowState(),
        1,
        ("p9",),
    ),
    (
        "ageing: a task that waited longer than its head start goes first",
        [c("p5", -(4 * STEP_S + 1), 5), c("p9", 0, 9)],
        FIFO,
        FlowState(),
        1,
        ("p5",),
    ),
    (
        "ageing: the lowest priority ages past every fresher task",
        [c("p9", 0, 9), c("p1", -(8 * STEP_S + 1), 1), c("p5", -(4 * STEP_S), 5)],
        FIFO,
        FlowState(),
        3,
        ("p1", "p5", "p9"),
    ),
    (
        "ageing with fairness: an aged task takes its turn at the rank it reached",
        [c("a1", -(3 * STEP_S + 30), 5, fk="A"), c("b1", 0, 8, fk="B"), c("b2", 1, 8, fk="B")],
        FAIR,
        FlowState(passes={"A": 0, "B": STRIDE}),
        2,
        ("a1", "b1"),
    ),
    (
        "ageing with fairness: not yet aged, the higher priority keeps its turns",
        [c("a1", -(2 * STEP_S), 5, fk="A"), c("b1", 0, 8, fk="B"), c("b2", 1, 8, fk="B")],
        FAIR,
        FlowState(passes={"A": 0, "B": STRIDE}),
        2,
        ("b1", "b2"),
    ),
    (
        "fairness and concurrency: a fair pick at its limit passes to the next key",
        [c("a1", 0, ck="k", fk="A"), c("b1", 1, ck="k", fk="B"), c("c1", 2, fk="C")],
        FlowSettings(max_running_per_key=1, fairness=True),
        FlowState(),
        3,
        ("a1", "c1"),
    ),
    (
        "priority, concurrency and rate together",
        [c("h1", 0, 9, ck="x"), c("h2", 1, 9, ck="x"), c("l1", 2, 2, ck="y"), c("l2", 3, 2)],
        FlowSettings(max_running_per_key=1, rate=RateLimit(1, 2)),
        FlowState(),
        4,
        ("h1", "l1"),
    ),
]


@pytest.mark.parametrize(("name", "cands", "flow", "state", "slots", "chosen"), CHOICES)
def test_lease_choice(name, cands, flow, state, slots, chosen) -> None:
    assert choose(cands, flow, state, T0, slots).chosen == chosen, name


def test_refusals_are_counted_by_reason_and_the_wake_is_the_next_token() -> None:
    flow = FlowSettings(max_running_per_key=1, rate=RateLimit(4, 1, per_key=True))
    state = FlowState(running={"x": 1}, buckets={"y": Bucket(0.5, T0)})
    choice = choose([c("x1", 0, ck="x"), c("y1", 1, ck="y")], flow, state, T0, 2)
    assert choice.chosen == ()
    assert choice.refused == {WaitingReason.CONCURRENCY_LIMIT: 1, WaitingReason.RATE_LIMIT: 1}
    assert choice.wake_at == T0 + timedelta(seconds=0.125)  # half a token at 4/s
    assert choice.blocked == frozenset({"x"})


def test_buckets_and_passes_written_back() -> None:
    flow = FlowSettings(rate=RateLimit(10, 3), fairness=True)
    choice = choose([c("a1", 0, fk="A"), c("b1", 1, fk="B")], flow, FlowState(), T0, 2)
    assert choice.buckets == {QUEUE_BUCKET: Bucket(1.0, T0)}
    assert choice.passes == {"A": STRIDE, "B": STRIDE, "": 0}


@pytest.mark.parametrize(
    ("bucket", "elapsed_s", "tokens"),
    [
        (None, 0, 5.0),  # a new bucket starts full
        (Bucket(0.0, T0), 0.1, 1.0),
        (Bucket(4.5, T0), 10, 5.0),  # never above the burst
        (Bucket(2.0, T0), -3, 2.0),  # a clock that went back adds nothing
    ],
)
def test_refill(bucket, elapsed_s, tokens) -> None:
    assert refill(
        bucket, RateLimit(10, 5), T0 + timedelta(seconds=elapsed_s)
    ).tokens == pytest.approx(tokens)


def test_token_due() -> None:
    assert token_due(Bucket(0.25, T0), RateLimit(2, 5)) == T0 + timedelta(seconds=0.375)
    assert token_due(Bucket(3.0, T0), RateLimit(2, 5)) == T0


# ---------------------------------------------------------------------- properties
tasks_st = st.lists(
    st.tuples(
        st.integers(1, 9),  # priority
        st.sampled_from([None, "k1", "k2", "k3"]),  # concurrency key
        st.sampled_from([None, "A", "B", "C"]),  # fairness key
        st.integers(1, 3),  # weight
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(
    tasks=tasks_st,
    limit=st.integers(1, 3),
    fairness=st.booleans(),
    rate=st.sampled_from([None, RateLimit(5, 2), RateLimit(3, 1, per_key=True)]),
    slots=st.lists(st.integers(0, 4), min_size=1, max_size=8),
    finish=st.lists(st.integers(0, 3), min_size=1, max_size=8),
)
def test_limits_hold_no_double_lease_and_everything_is_leased(
    tasks, limit, fairness, rate, slots, finish
) -> None:
    flow = FlowSettings(max_running_per_key=limit, rate=rate, fairness=fairness)
    waiting = {
        f"t{i}": FlowCandidate(f"t{i}", p, READY + timedelta(milliseconds=i), ck, fk, w)
        for i, (p, ck, fk, w) in enumerate(tasks)
    }
    running: list[FlowCandidate] = []
    leased: set[str] = set()
    buckets: dict[str, Bucket] = {}
    passes: dict[str, int] = {}
    now = T0
    for turn in range(20 * len(tasks) + 50):
        counts: dict[str, int] = {}
        for task in running:
            if task.concurrency_key is not None:
                counts[task.concurrency_key] = counts.get(task.concurrency_key, 0) + 1
        state = FlowState(counts, dict(buckets), dict(passes))
        size = slots[turn % len(slots)] or 1
        choice = choose(list(waiting.values()), flow, state, now, size)
        assert len(choice.chosen) <= size
        for task_id in choice.chosen:
            assert task_id not in leased, "leased twice"
            leased.add(task_id)
            running.append(waiting.pop(task_id))
        for task in running:
            key = task.concurrency_key
            if key is not None:
                assert sum(1 for r in running if r.concurrency_key == key) <= limit
        buckets.update(choice.buckets)
        passes.update(choice.passes)
        del running[: finish[turn % len(finish)] or 1]  # workers finish some
        now += timedelta(milliseconds=250)
        if not waiting:
            break
    assert not waiting, "an eligible task was never leased"


@settings(max_examples=150, deadline=None)
@given(
    priority=st.integers(1, 8),
    fairness=st.booleans(),
    arrivals=st.lists(
        st.tuples(
            st.integers(1, 180),  # seconds since the previous tick
            st.lists(
                st.tuples(st.integers(1, 9), st.sampled_from(["A", "B", "C"])),
                max_size=2,
            ),  # tasks ready at this tick besides the flood: priority, fairness key
        ),
        min_size=10,
        max_size=80,
    ),
)
def test_no_priority_starves_ageing_bounds_who_goes_first(priority, fairness, arrivals) -> None:
    """A task of any priority is leased before every task that became ready later than its
    starvation horizon (with fairness, one ageing step later), however many higher-priority
    tasks keep coming: one lease per tick, a flood of one priority-9 task per tick plus the
    drawn ones (strict priority fails this: the flood goes first for as long as it lasts)."""
    flow = FAIR if fairness else FIFO
    low = FlowCandidate("low", priority, T0, fairness_key="L")
    horizon = starvation_horizon(T0, priority) + (AGEING_STEP if fairness else timedelta(0))
    waiting = {"low": low}
    passes: dict[str, int] = {}
    now, n = T0, 0
    ticks = iter(arrivals)
    while "low" in waiting:
        gap, ready = next(ticks, (60, None))
        now += timedelta(seconds=gap)
        for p, key in [] if ready is None else [(9, "A"), *ready]:
            waiting[f"t{n}"] = FlowCandidate(f"t{n}", p, now, fairness_key=key)
            n += 1
        choice = choose(list(waiting.values()), flow, FlowState(passes=dict(passes)), now, 1)
        passes.update(choice.passes)
        for task_id in choice.chosen:
            leased = waiting.pop(task_id)
            assert task_id == "low" or leased.available_at <= horizon, (
                f"{task_id} (priority {leased.priority}, ready {leased.available_at}) "
                f"overtook a priority-{priority} task past its horizon {horizon}"
            )

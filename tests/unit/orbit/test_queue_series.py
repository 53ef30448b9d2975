"""The per-queue metrics keep at most `limit` queues under their own (namespace, queue)
labels, the rest folded into `_other`; a queue keeps its labels once it has them; and the
collector renders the snapshot's figures (ready age from available_at, scheduled apart,
finished tasks as a counter) under the Prometheus naming rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentcall.orbit.api.queue_metrics import QueueCollector, figures
from agentcall.orbit.domain.queue_series import OTHER, QueueFigures, bounded
from tests.support import metric_names

pytestmark = pytest.mark.unit


def q(name: str, age: float = 0.0, ready: int = 0, ns: str = "ns", **counts: int) -> QueueFigures:
    return QueueFigures(ns, name, counts, ready, 0, age)


@pytest.mark.parametrize(
    ("queues", "kept", "limit", "own", "other"),
    [
        # fewer queues than places: all their own, no _other
        ([q("a"), q("b")], set(), 5, {"a", "b"}, None),
        # free places go to the oldest ready task first, then to the most ready tasks
        ([q("a", 1), q("b", 90), q("c", 30)], set(), 2, {"b", "c"}, q(OTHER, 1, ns=OTHER)),
        ([q("a", 0, 1), q("b", 0, 7), q("c", 0, 3)], set(), 1, {"b"}, q(OTHER, 0, 4, ns=OTHER)),
        # a queue that has its labels keeps them, even when a newer one is older
        ([q("a", 1), q("b", 90)], {("ns", "a")}, 1, {"a"}, q(OTHER, 90, ns=OTHER)),
        # no place at all: everything in _other, counts added, the largest age kept
        (
            [q("a", 5, 1, WAITING=2), q("b", 9, 2, WAITING=3, FAILED=1)],
            set(),
            0,
            set(),
            QueueFigures(OTHER, OTHER, {"WAITING": 5, "FAILED": 1}, 3, 0, 9),
        ),
        # a queue named like the fold, or not known yet, is folded too
        ([q(OTHER, 1, ns=OTHER), q("", 2, ns="")], set(), 5, set(), q(OTHER, 2, ns=OTHER)),
    ],
)
def test_queues_beyond_the_limit_are_folded_into_other(
    queues: list[QueueFigures],
    kept: set[tuple[str, str]],
    limit: int,
    own: set[str],
    other: QueueFigures | None,
) -> None:
    series = bounded(queues, frozenset(kept), limit)
    assert {s.queue for s in series.queues if s.queue != OTHER} == own
    folded = [s for s in series.queues if s.queue == OTHER]
    assert folded == ([other] if other is not None else [])
    assert series.kept == frozenset(kept) | {("ns", name) for name in own}
    assert len(series.queues) <= max(0, limit) + 1


def test_the_series_stay_bounded_as_queues_come_and_go() -> None:
    kept: frozenset[tuple[str, str]] = frozenset()
    for round_ in range(20):
        queues = [q(f"q{round_}-{n}", age=n) for n in range(10)]
        series = bounded(queues, kept, 3)
        kept = series.kept
        assert len(series.queues) <= 4 and len(kept) <= 3


NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def test_figures_count_the_ready_age_from_available_at_and_scheduled_apart() -> None:
    counts = {"q1": {"WAITING": 5, "SUCCEEDED": 2}, "q2": {"WAITING": 1}, "q3": {"RUNNING": 1}}
    labels = {"q1": ("acme", "calls"), "q2": ("acme", "later")}
    ready = {"q1": NOW - timedelta(seconds=90)}
    found = figures(counts, labels, ready, {"q1": 2, "q2": 1}, NOW)
    assert found == [
        QueueFigures("acme", "calls", {"WAITING": 5, "SUCCEEDED": 2}, 3, 2, 90.0),
        QueueFigures("acme", "later", {"WAITING": 1}, 0, 1, 0.0),
        QueueFigures(OTHER, OTHER, {"RUNNING": 1}, 0, 0, 0.0),  # its name not known yet
    ]


def render(collector: QueueCollector) -> str:
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return generate_latest(registry).decode()


def test_the_collector_renders_gauges_and_a_counter_for_finished_tasks() -> None:
    collector = QueueCollector(limit=1)
    collector.update(
        [
            QueueFigures("acme", "calls", {"WAITING": 3, "SUCCEEDED": 4}, 3, 0, 12.5),
            QueueFigures("beta", "calls", {"NEEDS_REVIEW": 2, "CANCELLED": 1}, 0, 0, 0.0),
        ]
    )
    text = render(collector)
    assert 'orbit_queue_oldest_ready_age_seconds{namespace="acme",queue="calls"} 12.5' in text
    assert 'orbit_queue_ready_tasks{namespace="acme",queue="calls"} 3.0' in text
    line = 'orbit_queue_finished_tasks_total{namespace="acme",queue="calls",state="SUCCEEDED"} 4.0'
    assert line in text
    review = 'orbit_queue_tasks{namespace="_other",queue="_other",state="NEEDS_REVIEW"} 2.0'
    assert review in text
    found = metric_names.families(text)
    left = {s.labels["state"] for f in found if f.name == "orbit_queue_tasks" for s in f.samples}
    assert left == {"WAITING", "LEASED", "RUNNING", "NEEDS_REVIEW", "FAILED"}
    types = {f.name: f.type for f in found}
    assert types == {
        "orbit_queue_oldest_ready_age_seconds": "gauge",
        "orbit_queue_ready_tasks": "gauge",
        "orbit_queue_scheduled_tasks": "gauge",
        "orbit_queue_tasks": "gauge",
        "orbit_queue_finished_tasks": "counter",
    }
    assert metric_names.violations(text, ("orbit_",)) == []

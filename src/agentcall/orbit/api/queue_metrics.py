"""The per-queue metrics, labelled by namespace and queue name (bounded:
`agentcall.orbit.domain.queue_series`), computed when scraped from the inspection snapshot:

- `orbit_queue_oldest_ready_age_seconds{namespace,queue}` (gauge): how long the queue's oldest
  ready task (WAITING, `available_at` come) has been available; 0 when nothing is ready;
- `orbit_queue_ready_tasks{namespace,queue}` and `orbit_queue_scheduled_tasks{namespace,queue}`
  (gauges): WAITING tasks available now, and only later;
- `orbit_queue_tasks{namespace,queue,state}` (gauge): tasks in the states a task leaves
  (WAITING, LEASED, RUNNING, NEEDS_REVIEW, FAILED: a retry takes it back);
- `orbit_queue_finished_tasks_total{namespace,queue,state}` (counter): tasks in the states a
  task never leaves (SUCCEEDED, CANCELLED), a number that only grows."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from agentcall.orbit.domain.queue_series import (
    DEFAULT_LIMIT,
    OTHER,
    Key,
    QueueFigures,
    bounded,
)
from agentcall.orbit.domain.states import TaskState

FINAL = (TaskState.SUCCEEDED.value, TaskState.CANCELLED.value)
LEFT = tuple(s.value for s in TaskState if s.value not in FINAL)
LABELS = ["namespace", "queue"]


def figures(
    counts: Mapping[str, Mapping[str, int]],
    labels: Mapping[str, tuple[str, str]],
    ready_since: Mapping[str, datetime],
    scheduled: Mapping[str, int],
    now: datetime,
) -> list[QueueFigures]:
    """One `QueueFigures` per queue with tasks; `ready_since`: the oldest ready task's
    `available_at` of the queues with ready tasks."""
    out = []
    for queue_id, states in counts.items():
        namespace, queue = labels.get(queue_id, (OTHER, OTHER))
        later = scheduled.get(queue_id, 0)
        since = ready_since.get(queue_id)
        age = 0.0 if since is None else max(0.0, (now - since).total_seconds())
        ready = max(0, states.get(TaskState.WAITING.value, 0) - later)
        out.append(QueueFigures(namespace, queue, dict(states), ready, later, age))
    return out


class QueueCollector(Collector):
    """Keeps the series of the last refresh; `update` is called before each scrape."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self._kept: frozenset[Key] = frozenset()
        self._queues: list[QueueFigures] = []

    def update(self, queues: list[QueueFigures]) -> None:
        series = bounded(queues, self._kept, self.limit)
        self._kept, self._queues = series.kept, series.queues

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        age = GaugeMetricFamily(
            "orbit_queue_oldest_ready_age_seconds",
            "How long the oldest ready task (WAITING, available_at come) has been available",
            labels=LABELS,
        )
        ready = GaugeMetricFamily(
            "orbit_queue_ready_tasks", "WAITING tasks available now", labels=LABELS
        )
        later = GaugeMetricFamily(
            "orbit_queue_scheduled_tasks", "WAITING tasks available only later", labels=LABELS
        )
        tasks = GaugeMetricFamily(
            "orbit_queue_tasks",
            "Tasks by state, of the states a task leaves",
            labels=[*LABELS, "state"],
        )
        final = CounterMetricFamily(
            "orbit_queue_finished_tasks",
            "Tasks that reached a state they never leave (SUCCEEDED, CANCELLED)",
            labels=[*LABELS, "state"],
        )
        for q in self._queues:
            key = [q.namespace, q.queue]
            age.add_metric(key, q.oldest_ready_age_s)
            ready.add_metric(key, q.ready)
            later.add_metric(key, q.scheduled)
            for state in LEFT:
                tasks.add_metric([*key, state], q.counts.get(state, 0))
            for state in FINAL:
                final.add_metric([*key, state], q.counts.get(state, 0))
        yield from (age, ready, later, tasks, final)

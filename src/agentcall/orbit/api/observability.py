"""The execution side's Prometheus metrics and the waiters' wake-ups.

- `orbit_tasks{queue_id,state}` (gauge): computed when scraped from the inspection snapshot
  (one grouped query, cached a few seconds), never on the submit or lease paths;
- `orbit_attempt_duration_seconds{handler}` (histogram): lease to end, attempts leased here;
- `orbit_attempt_outcomes_total{handler,outcome,error_code}`: the task state after each end;
- `orbit_lease_wait_seconds{handler}` (histogram): ready (WAITING) to LEASED;
- `orbit_workers_connected` (gauge): worker connections of this process;
- the per-queue metrics labelled by namespace and queue name (`agentcall.orbit.api.queue_metrics`),
  from the same snapshot, and the flow-control metrics of the queues with flow settings
  (`agentcall.orbit.api.flow_metrics`), read when that snapshot is renewed.

Each observation is O(1); label sets are capped (`MAX_SERIES`) so hostile handler names or
error codes cannot grow the registry without bound."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.metrics import MetricWrapperBase

from agentcall.orbit.api.flow_metrics import FlowCollector
from agentcall.orbit.api.queue_metrics import QueueCollector, figures
from agentcall.orbit.domain.queue_series import QueueFigures
from agentcall.orbit.execution.flow import FlowControl
from agentcall.orbit.execution.inspection import Inspection, Snapshot
from agentcall.orbit.execution.observe import ExecutionObserver
from agentcall.orbit.execution.queue_labels import QueueLabels
from agentcall.orbit.execution.waiters import Waiters
from agentcall.orbit.usecases.queue_flow import flow_statuses

log = logging.getLogger("orbit.api")
MAX_SERIES = 2000
OTHER = "_other"
SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)


class ExecutionMetrics(ExecutionObserver):
    def __init__(self, registry: CollectorRegistry, waiters: Waiters) -> None:
        self.waiters = waiters
        self.durations = Histogram(
            "orbit_attempt_duration_seconds",
            "Attempt duration (lease to end) by handler",
            ["handler"],
            registry=registry,
            buckets=SECONDS,
        )
        self.outcomes = Counter(
            "orbit_attempt_outcomes",
            "Attempt ends by handler, task state after the end and the worker's error code",
            ["handler", "outcome", "error_code"],
            registry=registry,
        )
        self.lease_wait = Histogram(
            "orbit_lease_wait_seconds",
            "Time from ready (WAITING) to LEASED by handler",
            ["handler"],
            registry=registry,
            buckets=SECONDS,
        )
        self._series: set[tuple[str, ...]] = set()
        # the labelled children by their raw label values (`labels()` validates, converts and
        # locks on every call: a few µs, twice per task); as capped as the series
        self._children: dict[tuple[Any, ...], Any] = {}

    def _labels(self, *values: str) -> tuple[str, ...]:
        if values in self._series or len(self._series) < MAX_SERIES:
            self._series.add(values)
            return values
        return tuple(OTHER for _ in values)

    def _child(self, metric: MetricWrapperBase, *values: str) -> Any:
        key = (metric, *values)
        child = self._children.get(key)
        if child is None:
            child = metric.labels(*self._labels(*values))
            if len(self._children) < 3 * MAX_SERIES:
                self._children[key] = child
        return child

    def lease_waited(self, handler: str, seconds: float) -> None:
        self._child(self.lease_wait, handler).observe(seconds)

    def attempt_ended(self, handler: str, outcome: str, error_code: str, seconds: float) -> None:
        self._child(self.durations, handler).observe(seconds)
        self._child(self.outcomes, handler, outcome, error_code).inc()

    def task_changed(self, task_id: str) -> None:
        self.waiters.wake(task_id)


def inspection_failures(registry: CollectorRegistry) -> Counter:
    return Counter(
        "orbit_inspection_failures",
        "Failed inspection queries (metrics scrape, waiters' shared check, readiness)",
        registry=registry,
    )


class TaskGauges:
    """`orbit_tasks`, the per-queue metrics, `orbit_workers_connected` and
    `orbit_result_waiters`, refreshed by `refresh()` before a scrape."""

    def __init__(
        self,
        registry: CollectorRegistry,
        inspection: Inspection,
        failures: Counter,
        flow: FlowControl | None = None,
    ) -> None:
        self.inspection = inspection
        self.flow = flow or FlowControl()
        self.tasks = Gauge(
            "orbit_tasks",
            "Tasks by queue and state (a few seconds old at most)",
            ["queue_id", "state"],
            registry=registry,
        )
        workers = Gauge(
            "orbit_workers_connected",
            "Worker connections of this server process",
            registry=registry,
        )
        workers.set_function(lambda: len(inspection.hub.links))
        waiting = Gauge(
            "orbit_result_waiters",
            "Long-polls of this server process waiting for a task to settle",
            registry=registry,
        )
        waiting.set_function(lambda: inspection.waiters.waiting)
        self.failures = failures  # `inspection_failures`: made first, the waiters count too
        self._taken = -1.0
        self.labels = QueueLabels(inspection.db)
        self.queues = QueueCollector()
        registry.register(self.queues)
        self.flow_queues = FlowCollector(self.flow.refused)
        registry.register(self.flow_queues)

    async def refresh(self) -> None:
        """Never raises: when the database does not answer, the last values stay."""
        try:
            snap = await self.inspection.snapshot()
            labels = await self.labels.of(snap.counts)
            if snap.taken != self._taken:
                await self._refresh_flow()
        except Exception:  # noqa: BLE001 - counted and logged; the scrape still answers
            self.failures.inc()
            log.warning("orbit_tasks refresh failed; the last values stay", exc_info=True)
            return
        self.queues.update(_figures(snap, labels))
        if snap.taken == self._taken:
            return
        self._taken = snap.taken
        self.tasks.clear()
        for queue_id, states in snap.counts.items():
            for state, count in states.items():
                self.tasks.labels(queue_id, state).set(count)

    async def _refresh_flow(self) -> None:
        controlled = self.flow.controlled()
        statuses = await flow_statuses(self.inspection.db, controlled) if controlled else {}
        refused = {queue_id for queue_id, _ in list(self.flow.refused)}
        labels = await self.labels.of(set(controlled) | refused)
        self.flow_queues.update(statuses, labels)


def _figures(snap: Snapshot, labels: dict[str, tuple[str, str]]) -> list[QueueFigures]:
    """The snapshot's queues for the per-queue metrics, their ready ages counted to now."""
    ready = {q: at for q in snap.counts if (at := snap.oldest_ready(q)) is not None}
    scheduled = {q: snap.scheduled(q) for q in snap.counts}
    return figures(snap.counts, labels, ready, scheduled, datetime.now(UTC))

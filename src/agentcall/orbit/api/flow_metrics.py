"""The flow-control metrics of the queues with flow settings (docs/orbit/flow-control.md),
labelled by namespace and queue name like the other per-queue metrics, computed when scraped:

- `orbit_queue_held_tasks{namespace,queue,reason}` (gauge): ready WAITING tasks held back by
  a limit, `reason` concurrency_limit or rate_limit (the tasks' `waiting_reason`);
- `orbit_queue_key_running_tasks{namespace,queue,key}` (gauge): LEASED and RUNNING tasks per
  concurrency key, for the `TOP_KEYS` keys running most in each queue only; the other keys'
  tasks are added up under `key="_other"`;
- `orbit_queue_leases_refused_total{namespace,queue,limit}` (counter): how many times a lease
  round of this process passed a ready task over, `limit` concurrency or rate.

Label sets are bounded: at most `limit` queues keep their own labels (first come, kept for the
life of the process), the others fold into `namespace="_other",queue="_other"`; at most
`TOP_KEYS + 1` keys per queue."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from agentcall.orbit.domain.flow import WaitingReason
from agentcall.orbit.domain.flow_status import QueueStatus
from agentcall.orbit.domain.queue_series import DEFAULT_LIMIT, OTHER, Key

LABELS = ["namespace", "queue"]
LIMIT_LABEL = {
    WaitingReason.CONCURRENCY_LIMIT: "concurrency",
    WaitingReason.RATE_LIMIT: "rate",
}


@dataclass(slots=True)
class _Queue:
    held: dict[str, int] = field(default_factory=dict)
    running: dict[str, int] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)


def _add(into: dict[str, int], key: str, n: int) -> None:
    into[key] = into.get(key, 0) + n


class FlowCollector(Collector):
    """`refused`: the counts of `FlowControl.refused`, read at each scrape; `update` gives the
    statuses and queue names of the last refresh."""

    def __init__(
        self, refused: Mapping[tuple[str, WaitingReason], int], limit: int = DEFAULT_LIMIT
    ) -> None:
        self.refused = refused
        self.limit = limit
        self._kept: set[Key] = set()
        self._statuses: dict[str, QueueStatus] = {}
        self._labels: dict[str, Key] = {}

    def update(self, statuses: dict[str, QueueStatus], labels: Mapping[str, Key]) -> None:
        self._statuses = statuses
        self._labels.update(labels)

    def _key(self, queue_id: str) -> Key:
        key = self._labels.get(queue_id)
        if key is None or key == (OTHER, OTHER):
            return (OTHER, OTHER)
        if key in self._kept or len(self._kept) < self.limit:
            self._kept.add(key)
            return key
        return (OTHER, OTHER)

    def _queues(self) -> dict[Key, _Queue]:
        out: dict[Key, _Queue] = {}
        for queue_id in sorted(self._statuses):
            status = self._statuses[queue_id]
            q = out.setdefault(self._key(queue_id), _Queue())
            for reason, n in status.waiting.items():
                _add(q.held, reason, n)
            for item in status.top:
                _add(q.running, item.key, item.running)
            if status.other_running:
                _add(q.running, OTHER, status.other_running)
        for (queue_id, reason), n in sorted(dict(self.refused).items()):
            q = out.setdefault(self._key(queue_id), _Queue())
            _add(q.refused, LIMIT_LABEL[reason], n)
        return out

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        held = GaugeMetricFamily(
            "orbit_queue_held_tasks",
            "Ready WAITING tasks of a flow-controlled queue held back by a limit, by reason",
            labels=[*LABELS, "reason"],
        )
        running = GaugeMetricFamily(
            "orbit_queue_key_running_tasks",
            "LEASED and RUNNING tasks per concurrency key (the busiest keys; _other: the rest)",
            labels=[*LABELS, "key"],
        )
        refused = CounterMetricFamily(
            "orbit_queue_leases_refused",
            "Times a lease round passed a ready task over because of a limit",
            labels=[*LABELS, "limit"],
        )
        for (namespace, queue), q in self._queues().items():
            for reason in WaitingReason:
                held.add_metric([namespace, queue, reason.value], q.held.get(reason.value, 0))
            for key, n in q.running.items():
                running.add_metric([namespace, queue, key], n)
            for limit in LIMIT_LABEL.values():
                refused.add_metric([namespace, queue, limit], q.refused.get(limit, 0))
        yield from (held, running, refused)

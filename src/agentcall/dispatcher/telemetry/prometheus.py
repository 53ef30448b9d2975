"""The Dispatcher's own Prometheus registry: histograms and counters fed by the
:class:`~agentcall.dispatcher.telemetry.port.Telemetry` calls of its components.

One registry per process, built once at assembly and kept (never rebuilt per scrape);
``GET /metrics`` renders it after the gauges taken from the status snapshot
(:mod:`agentcall.dispatcher.web.metrics`). Every name follows the Prometheus conventions: base units
(``_seconds``), ``_total`` on counters, the ``dispatcher_`` prefix. The per-task counters
label at most :data:`~agentcall.dispatcher.telemetry.labels.TASK_LIMIT` tasks, then ``_other``
(:mod:`agentcall.dispatcher.telemetry.labels`).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from agentcall.dispatcher.telemetry.labels import TASK_LIMIT, FirstSeen

ADMISSION_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
DIAL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
WAITING_DIAL_LIMIT = 100_000  # accepted executions remembered until their originate
CHILDREN_LIMIT = 10_000  # label combinations of call_result kept resolved


class PrometheusTelemetry:
    """A :class:`~agentcall.dispatcher.telemetry.port.Telemetry` that keeps Prometheus metrics."""

    def __init__(
        self, monotonic: Callable[[], float] = time.monotonic, task_limit: int = TASK_LIMIT
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._monotonic = monotonic
        self._waiting: OrderedDict[str, float] = OrderedDict()
        self._children: dict[tuple[str, str, str, str], tuple[Counter, ...]] = {}
        self._task = FirstSeen(task_limit)
        r = self.registry
        self._admission = Histogram(
            "dispatcher_admission_latency_seconds",
            "call.execute delivery to the commit of its admission decision",
            buckets=ADMISSION_BUCKETS,
            registry=r,
        )
        self._dial = Histogram(
            "dispatcher_command_to_dial_seconds",
            "call.execute delivery to the cell's answer to the originate of its call",
            buckets=DIAL_BUCKETS,
            registry=r,
        )
        self._saas = Counter(
            "dispatcher_saas_read_errors_total",
            "failed SaaS reads by resource (discovery, sip, task, quota) and HTTP status "
            "(timeout / transport_error when none came back)",
            ["resource", "status"],
            registry=r,
        )
        self._calls = Counter(
            "dispatcher_calls_total",
            "calls by outcome and reason, counted when the broker confirms their call.result",
            ["outcome", "reason"],
            registry=r,
        )
        self._recordings = Counter(
            "dispatcher_recordings_final_total",
            "final recording status of the calls whose call.result the broker confirmed",
            ["status"],
            registry=r,
        )
        self._task_calls = Counter(
            "dispatcher_task_calls_total",
            "calls by task (the first tasks seen, then _other) and outcome, counted when the "
            "broker confirms their call.result",
            ["task", "outcome"],
            registry=r,
        )
        self._task_commands = Counter(
            "dispatcher_task_commands_total",
            "call.execute decisions by task (the first tasks seen, then _other) and decision",
            ["task", "decision"],
            registry=r,
        )

    def admission_latency(self, seconds: float) -> None:
        self._admission.observe(max(0.0, seconds))

    def accepted(self, received: Mapping[str, float]) -> None:
        waiting = self._waiting
        waiting.update(received)
        while len(waiting) > WAITING_DIAL_LIMIT:
            waiting.popitem(last=False)

    def originated(self, execution_id: str, dialled: bool) -> None:
        received = self._waiting.pop(execution_id, None)
        if dialled and received is not None:
            self._dial.observe(max(0.0, self._monotonic() - received))

    def saas_read_failed(self, resource: str, status: str) -> None:
        self._saas.labels(resource, status).inc()

    def commands_decided(self, decisions: Sequence[tuple[str, str]]) -> None:
        for task_id, decision in decisions:
            self._task_commands.labels(self._task(task_id), decision).inc()

    def call_result(self, outcome: str, reason: str, recording: str, task_id: str) -> None:
        key = (outcome, reason, recording, task_id)
        children = self._children.get(key)
        if children is None:  # labels() costs more than inc(): once per combination
            children = (
                self._calls.labels(outcome, reason),
                self._recordings.labels(recording),
                self._task_calls.labels(self._task(task_id), outcome),
            )
            if len(self._children) < CHILDREN_LIMIT:  # task ids are many: the cache is bounded
                self._children[key] = children
        for child in children:
            child.inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)

"""Prometheus gauges and counters taken from the same snapshot as ``GET /status``.

``GET /metrics`` renders them followed by the process's own registry of histograms and
counters (:mod:`agentcall.dispatcher.telemetry.prometheus`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from agentcall.dispatcher.domain.recording import RecordingState
from agentcall.dispatcher.domain.states import ExecutionState, OutboxState
from agentcall.dispatcher.readiness import CHECKS
from agentcall.dispatcher.web.edge import Edge


class _SnapshotCollector(Collector):
    def __init__(self, snapshot: Mapping[str, Any]) -> None:
        self._s = snapshot

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        s = self._s
        yield _gauge(
            "dispatcher_admission_open", "1 when new admission is open", s["admission"]["open"]
        )
        yield from _stored(s)
        yield _labelled_gauge(
            "dispatcher_recordings",
            "recordings by state, and unavailable ones by error code (unavailable:<code>)",
            "state",
            _recording_counts(s.get("recordings") or {}),
        )
        commands = CounterMetricFamily(
            "dispatcher_commands", "call.execute decisions", labels=["decision", "reason"]
        )
        for key, value in s["commands"].items():
            decision, _, reason = key.partition(":")
            commands.add_metric([decision, reason or decision], value)
        yield commands
        disc = s["discovery"]
        yield _gauge("dispatcher_discovery_cursor", "persisted discovery cursor", disc["cursor"])
        yield _counter("dispatcher_discovery_errors", "failed discovery rounds", disc["errors"])
        yield _counter(
            "dispatcher_discovery_pages_rejected", "rejected pages", disc["pages_rejected"]
        )
        yield from _edges(s)
        consumers = GaugeMetricFamily(
            "dispatcher_task_consumers", "task queues by consumer state", labels=["state"]
        )
        for state, count in _count(t["consumer"] for t in s["tasks"]).items():
            consumers.add_metric([state], count)
        yield consumers
        yield from _readiness(s)
        yield _counter(
            "dispatcher_outbox_published",
            "results confirmed by the broker",
            s["relay"]["published"],
        )
        yield _counter(
            "dispatcher_rejected_inputs", "redacted rejected inputs", s["rejected_inputs"]["count"]
        )
        yield _gauge("dispatcher_amqp_connected", "1 when connected", s["amqp"]["connected"])
        survived = CounterMetricFamily(
            "dispatcher_handled_errors", "failures caught, logged and survived", labels=["where"]
        )
        for where, count in (s.get("handled_errors") or {}).items():
            survived.add_metric([where], count)
        yield survived


def _stored(s: Mapping[str, Any]) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
    """Outbox rows and executions by state: the states left again as gauges, the one never
    left (delivered, finalized) as a counter, since rows are kept and it only grows."""
    outbox, executions = dict(s["outbox"]), dict(s["executions"])
    yield _counter(
        "dispatcher_outbox_delivered",
        "outbox rows the broker confirmed (rows are kept: this only grows)",
        outbox.pop(OutboxState.DELIVERED.value, 0),
    )
    yield _labelled_gauge(
        "dispatcher_outbox_events", "outbox rows not delivered, by state", "state", outbox
    )
    yield _counter(
        "dispatcher_executions_finalized",
        "executions whose call.result is stored (a state never left: this only grows)",
        executions.pop(ExecutionState.FINALIZED.value, 0),
    )
    yield _labelled_gauge(
        "dispatcher_executions", "executions by state, but finalized", "state", executions
    )


def _edges(s: Mapping[str, Any]) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
    """Refused discovery pages (D-NOTE-5), SaaS outages (D-NOTE-2), the cell's identity
    (D-NOTE-9)."""
    yield _labelled_counter(
        "dispatcher_discovery_pages_refused",
        "rejected pages by reason (queue_limit_exceeded: D-NOTE-5)",
        "reason",
        s["discovery"].get("rejected_by_reason") or {},
    )
    outages = s.get("outages") or {}
    yield _labelled_counter(
        "dispatcher_saas_read_failures",
        "failed SaaS config reads by resource (sip, task, quota), D-NOTE-2",
        "resource",
        outages.get("read_failures") or {},
    )
    yield _labelled_gauge(
        "dispatcher_saas_outages",
        "reads failing now, holding the commands that depend on them (D-NOTE-2)",
        "resource",
        _count(o["read"] for o in outages.get("active") or []),
    )
    cell = s.get("cell_identity") or {}
    yield _gauge(
        "dispatcher_cell_identity_mismatch",
        "1 while the cell does not carry the approved SIP snapshot (D-NOTE-9)",
        bool(cell) and not cell.get("verified"),
    )


def _readiness(s: Mapping[str, Any]) -> Iterator[GaugeMetricFamily]:
    """Readiness and its causes, the outbox backlog, the cell's reachability."""
    ready = s["readiness"]
    yield _gauge("dispatcher_ready", "1 when GET /readyz answers 200", ready["ready"])
    active = {c["cause"] for c in ready["causes"]}
    yield _labelled_gauge(
        "dispatcher_readiness_cause",
        "1 while this cause keeps the D from being ready (GET /readyz)",
        "cause",
        {cause: int(cause in active) for cause, _ in CHECKS},
    )
    backlog = s["outbox_backlog"]
    yield _gauge("dispatcher_outbox_backlog", "results waiting for the broker", backlog["pending"])
    yield _gauge(
        "dispatcher_outbox_oldest_pending_age_seconds",
        "age of the oldest result waiting for the broker (0 without backlog)",
        backlog["oldest_pending_age_s"],
    )
    yield _gauge(
        "dispatcher_cell_reachable", "1 while the cell answers", s["calls"]["cell_reachable"]
    )


def _recording_counts(values: Mapping[str, Any]) -> dict[str, int]:
    states = {state.value for state in RecordingState}
    return {
        key: value
        for key, value in values.items()
        if isinstance(value, int) and (key in states or key.startswith("unavailable:"))
    }


def _count(values: Iterator[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for value in values:
        out[value] = out.get(value, 0) + 1
    return out


def _gauge(name: str, doc: str, value: float | bool) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=float(value))


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, doc, value=float(value))


def _labelled_counter(
    name: str, doc: str, label: str, values: Mapping[str, int]
) -> CounterMetricFamily:
    family = CounterMetricFamily(name, doc, labels=[label])
    for key, value in values.items():
        family.add_metric([key], float(value))
    return family


def _labelled_gauge(
    name: str, doc: str, label: str, values: Mapping[str, int]
) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=[label])
    for key, value in values.items():
        family.add_metric([key], float(value))
    return family


class _EdgeCollector(Collector):
    def __init__(self, edge: Edge) -> None:
        self._edge = edge

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        edge = self._edge
        yield _gauge(
            "dispatcher_http_connections", "open connections to the HTTP port", len(edge.open)
        )
        yield _gauge(
            "dispatcher_http_connection_limit",
            "most connections kept open (DISPATCHER_HTTP_MAX_CONNECTIONS, under the file limit)",
            edge.max_connections,
        )
        yield _labelled_counter(
            "dispatcher_http_refused_connections",
            "connections answered and closed by the port's bounds: headers or body too slow,"
            " headers too large, pushed out or refused at the connection limit",
            "reason",
            edge.totals,
        )


def render_edge(edge: Edge) -> bytes:
    """The HTTP port's own figures (:class:`agentcall.dispatcher.web.edge.Edge`)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_EdgeCollector(edge))
    return generate_latest(registry)


def render(snapshot: Mapping[str, Any]) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_SnapshotCollector(snapshot))
    return generate_latest(registry)

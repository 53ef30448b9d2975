"""Prometheus metrics of one cell process (own registry, served on /metrics)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

HANDLED: dict[str, int] = {}
"""Failures caught, logged and survived, by place (``cell_handled_errors_total{where}``)."""


def count_handled(where: str) -> None:
    """Count a failure the process survives (its caller writes the log line)."""
    HANDLED[where] = HANDLED.get(where, 0) + 1


class _Handled(Collector):
    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "cell_handled_errors", "Failures caught, logged and survived", labels=["where"]
        )
        for where, count in sorted(HANDLED.items()):
            family.add_metric([where], count)
        yield family


class CellMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.originated = Counter(
            "cell_calls_originated_total", "Calls dialled (originate log entries)", registry=r
        )
        self.originate_refused = Counter(
            "cell_originate_refused_total", "Originate requests refused", ["code"], registry=r
        )
        self.ended = Counter("cell_calls_ended_total", "Calls ended", ["outcome"], registry=r)
        self.in_progress = Gauge("cell_calls_in_progress", "Calls not ended yet", registry=r)
        self.tracked = Gauge("cell_calls_tracked", "Calls kept until acknowledged", registry=r)
        self.events = Counter("cell_events_total", "Events emitted", ["type"], registry=r)
        self.uploads = Counter("cell_uploads_total", "Recording uploads", ["status"], registry=r)
        self.subscribers = Gauge(
            "cell_event_subscribers", "Connected event stream subscribers", registry=r
        )
        r.register(_Handled())

    def render(self) -> bytes:
        return generate_latest(self.registry)

"""Prometheus metrics of one cell process (own registry, served on /metrics)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest


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

    def render(self) -> bytes:
        return generate_latest(self.registry)

"""`orbit_log_messages_total{level, logger}`: every warning and error Orbit logs, counted.

Every failure the server catches and goes on from (a failed round of an execution loop, a
worker message the database could not apply, a failed token check, an internal error
answered 500) is logged at WARNING or above, so counting those records gives each of them a
metric without a counter per call site. Attached to the `orbit` logger while the app runs."""

from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry, Counter

ROOT_LOGGER = "orbit"


class LogCounter(logging.Handler):
    def __init__(self, registry: CollectorRegistry) -> None:
        super().__init__(logging.WARNING)
        self.counter = Counter(
            "orbit_log_messages",
            "Log records at WARNING or above, by level and logger",
            ["level", "logger"],
            registry=registry,
        )

    def emit(self, record: logging.LogRecord) -> None:
        self.counter.labels(record.levelname.lower(), record.name).inc()

    def attach(self) -> None:
        logging.getLogger(ROOT_LOGGER).addHandler(self)

    def detach(self) -> None:
        logging.getLogger(ROOT_LOGGER).removeHandler(self)

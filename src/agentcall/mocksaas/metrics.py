"""Prometheus metrics of one Mock SaaS process (own registry, served on /metrics)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, generate_latest


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.http = Counter(
            "mocksaas_http_responses", "HTTP responses", ["route", "status"], registry=self.registry
        )
        self.faults = Counter(
            "mocksaas_faults_served",
            "Injected faults served",
            ["scope", "kind"],
            registry=self.registry,
        )
        self.published = Counter(
            "mocksaas_messages_enqueued",
            "Messages put in the outbox",
            ["kind"],
            registry=self.registry,
        )
        self.results = Counter(
            "mocksaas_results_stored", "Results stored", ["valid"], registry=self.registry
        )
        self.retired = Counter(
            "mocksaas_task_queues_retired", "Task queues retired", registry=self.registry
        )
        self.handled = Counter(
            "mocksaas_handled_errors",
            "Failures caught, logged and survived",
            ["where"],
            registry=self.registry,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)

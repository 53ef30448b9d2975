"""Prometheus view of the submit group commit: groups committed, submits in them, and groups
that ran again submit by submit (mean group size = submits / groups)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from agentcall.orbit.usecases.operations import Operations


class SubmitGroupCollector(Collector):
    def __init__(self, ops: Operations) -> None:
        self.ops = ops

    def collect(self) -> Iterator[CounterMetricFamily]:
        groups = self.ops.groups
        if groups is None:
            return
        yield CounterMetricFamily(
            "orbit_submit_groups",
            "Submit groups run (one transaction each)",
            value=groups.commit.groups,
        )
        yield CounterMetricFamily(
            "orbit_submit_group_items", "Submits that ran in a group", value=groups.commit.items
        )
        yield CounterMetricFamily(
            "orbit_submit_group_fallbacks",
            "Groups that failed and ran again submit by submit",
            value=groups.fallbacks,
        )


def register(registry: CollectorRegistry, ops: Operations) -> None:
    registry.register(SubmitGroupCollector(ops))

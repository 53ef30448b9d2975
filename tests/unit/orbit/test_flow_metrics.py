"""The flow-control metrics (`agentcall.orbit.api.flow_metrics`): the busiest concurrency keys of
a queue keep their own series and the rest add up under `_other`, queues beyond the label
limit fold into one `_other` series (counters added), and the exposition keeps the naming
rules."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from agentcall.orbit.api.flow_metrics import FlowCollector
from agentcall.orbit.domain.flow import FlowState, WaitingReason
from agentcall.orbit.domain.flow_settings import FlowSettings
from agentcall.orbit.domain.flow_status import queue_status
from tests.support import metric_names

pytestmark = pytest.mark.unit

NOW = datetime(2026, 1, 1, tzinfo=UTC)
LIMITED = FlowSettings(max_running_per_key=3)


def render(collector: FlowCollector) -> str:
    registry = CollectorRegistry()
    registry.register(collector)
    return generate_latest(registry).decode()


def test_the_busiest_keys_keep_their_series_and_the_rest_add_up_under_other() -> None:
    running = {f"k{n:02}": 1 + n % 3 for n in range(25)}  # k02, k05, ... run 3
    state = FlowState(running=running)
    status = queue_status(LIMITED, state, {"k02": 4, None: 1}, NOW, top=5)
    refused = {("q1", WaitingReason.CONCURRENCY_LIMIT): 7}
    collector = FlowCollector(refused)
    collector.update({"q1": status}, {"q1": ("acme", "calls")})
    text = render(collector)
    got = metric_names.samples(text)

    def value(name: str, **labels: str) -> float:
        key = tuple(sorted({"namespace": "acme", "queue": "calls", **labels}.items()))
        return got[(name, key)]

    keys = {dict(labels)["key"] for name, labels in got if name == "orbit_queue_key_running_tasks"}
    assert keys == {"k02", "k05", "k08", "k11", "k14", "_other"}
    assert value("orbit_queue_key_running_tasks", key="k02") == 3
    assert value("orbit_queue_key_running_tasks", key="_other") == sum(running.values()) - 15
    assert value("orbit_queue_held_tasks", reason="concurrency_limit") == 4
    assert value("orbit_queue_held_tasks", reason="rate_limit") == 0
    assert value("orbit_queue_leases_refused_total", limit="concurrency") == 7
    assert value("orbit_queue_leases_refused_total", limit="rate") == 0
    assert metric_names.violations(text, ("orbit_",)) == []


def test_queues_beyond_the_label_limit_fold_into_other_and_keep_counting() -> None:
    refused = {
        ("q1", WaitingReason.RATE_LIMIT): 2,
        ("q2", WaitingReason.RATE_LIMIT): 3,
        ("q3", WaitingReason.RATE_LIMIT): 5,
    }
    collector = FlowCollector(refused, limit=1)
    labels = {"q1": ("a", "one"), "q2": ("a", "two"), "q3": ("a", "three")}
    collector.update({}, labels)
    got = metric_names.samples(render(collector))
    rate = {
        (dict(k)["namespace"], dict(k)["queue"]): v
        for (name, k), v in got.items()
        if name == "orbit_queue_leases_refused_total" and dict(k)["limit"] == "rate"
    }
    assert rate == {("a", "one"): 2, ("_other", "_other"): 8}
    refused[("q2", WaitingReason.RATE_LIMIT)] = 4  # later scrapes keep the same series
    again = metric_names.samples(render(collector))
    other = (("limit", "rate"), ("namespace", "_other"), ("queue", "_other"))
    assert again[("orbit_queue_leases_refused_total", other)] == 9

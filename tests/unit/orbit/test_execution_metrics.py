"""The execution side's Prometheus metrics: per-handler series, counted through cached
children, and capped so that hostile handler names or error codes cannot grow the registry
without bound (what is over the cap is counted under `_other`)."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from agentcall.orbit.api import observability
from agentcall.orbit.api.observability import OTHER, ExecutionMetrics
from agentcall.orbit.execution.waiters import Waiters


async def _nothing_settled(ids: object) -> set[str]:
    return set()


def _metrics() -> tuple[ExecutionMetrics, CollectorRegistry]:
    registry = CollectorRegistry()
    return ExecutionMetrics(registry, Waiters(_nothing_settled)), registry


def _value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def test_every_observation_is_counted_under_its_own_labels() -> None:
    metrics, registry = _metrics()
    for _ in range(3):
        metrics.lease_waited("send", 0.002)
        metrics.attempt_ended("send", "SUCCEEDED", "", 0.02)
    metrics.attempt_ended("send", "WAITING", "TIMEOUT", 0.5)
    metrics.lease_waited("bill", 2.0)
    assert _value(registry, "orbit_lease_wait_seconds_count", handler="send") == 3
    assert _value(registry, "orbit_lease_wait_seconds_bucket", handler="bill", le="1.0") == 0
    assert _value(registry, "orbit_lease_wait_seconds_bucket", handler="bill", le="2.5") == 1
    assert _value(registry, "orbit_attempt_duration_seconds_count", handler="send") == 4
    assert (
        _value(
            registry,
            "orbit_attempt_outcomes_total",
            handler="send",
            outcome="SUCCEEDED",
            error_code="",
        )
        == 3
    )
    assert (
        _value(
            registry,
            "orbit_attempt_outcomes_total",
            handler="send",
            outcome="WAITING",
            error_code="TIMEOUT",
        )
        == 1
    )


@pytest.mark.parametrize("repeat", [1, 3])
def test_label_sets_over_the_cap_are_counted_as_other(
    monkeypatch: pytest.MonkeyPatch, repeat: int
) -> None:
    """Hostile error codes: past `MAX_SERIES` label sets, each new one is counted under
    `_other`, every time it comes back (cached or not), and no new series appears."""
    monkeypatch.setattr(observability, "MAX_SERIES", 4)
    metrics, registry = _metrics()
    for _ in range(repeat):
        for code in ("a", "b", "c", "d", "e", "f"):
            metrics.attempt_ended("send", "FAILED", code, 0.1)
    series = {
        (s.labels["handler"], s.labels["error_code"])
        for family in registry.collect()
        if family.name == "orbit_attempt_outcomes"
        for s in family.samples
        if s.name == "orbit_attempt_outcomes_total"
    }
    # one series taken by the durations' ("send",), three by the first codes, then _other
    assert series == {("send", "a"), ("send", "b"), ("send", "c"), (OTHER, OTHER)}
    assert (
        _value(
            registry, "orbit_attempt_outcomes_total", handler=OTHER, outcome=OTHER, error_code=OTHER
        )
        == 3 * repeat
    )
    assert (
        _value(
            registry,
            "orbit_attempt_outcomes_total",
            handler="send",
            outcome="FAILED",
            error_code="a",
        )
        == repeat
    )

"""The Dispatcher's own metrics: what each telemetry call observes, in base units, and that
the registry is one per process (values accumulate across scrapes)."""

from __future__ import annotations

import pytest

from agentcall.dispatcher.telemetry import prometheus
from agentcall.dispatcher.telemetry.port import NO_TELEMETRY
from agentcall.dispatcher.telemetry.prometheus import PrometheusTelemetry
from tests.support import metric_names

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def values(t: PrometheusTelemetry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in metric_names.families(t.render().decode())
        for s in f.samples
    }


def test_admission_latency_is_a_histogram_in_seconds() -> None:
    t = PrometheusTelemetry()
    t.admission_latency(0.004)
    t.admission_latency(0.2)
    v = values(t)
    assert v[("dispatcher_admission_latency_seconds_count", ())] == 2
    assert v[("dispatcher_admission_latency_seconds_sum", ())] == pytest.approx(0.204)
    assert v[("dispatcher_admission_latency_seconds_bucket", (("le", "0.005"),))] == 1


def test_command_to_dial_runs_from_the_commands_arrival_to_the_cells_answer() -> None:
    clock = Clock()
    t = PrometheusTelemetry(monotonic=clock)
    t.accepted({"x1": 99.0, "x2": 99.5, "x3": 99.9})
    clock.now = 101.0
    t.originated("x1", True)  # 2.0 s
    t.originated("x2", False)  # refused: not a dial
    t.originated("x1", True)  # observed once only
    t.originated("recovered-after-restart", True)  # arrival unknown: not observed
    v = values(t)
    assert v[("dispatcher_command_to_dial_seconds_count", ())] == 1
    assert v[("dispatcher_command_to_dial_seconds_sum", ())] == pytest.approx(2.0)


def test_waiting_commands_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prometheus, "WAITING_DIAL_LIMIT", 2)
    clock = Clock()
    t = PrometheusTelemetry(monotonic=clock)
    t.accepted({"a": 1.0, "b": 2.0, "c": 3.0})
    for execution_id in ("a", "b", "c"):
        t.originated(execution_id, True)
    assert values(t)[("dispatcher_command_to_dial_seconds_count", ())] == 2  # "a" forgotten


def test_calls_recordings_and_saas_errors_are_counted_by_label() -> None:
    t = PrometheusTelemetry()
    t.call_result("answered", "none", "uploaded", "t1")
    t.call_result("busy", "busy", "not_created", "t2")
    t.call_result("busy", "busy", "not_created", "t2")
    t.saas_read_failed("sip", "503")
    t.saas_read_failed("discovery", "timeout")
    t.render()  # a scrape changes nothing
    v = values(t)
    assert v[("dispatcher_calls_total", (("outcome", "busy"), ("reason", "busy")))] == 2
    assert v[("dispatcher_recordings_final_total", (("status", "uploaded"),))] == 1
    assert v[("dispatcher_recordings_final_total", (("status", "not_created"),))] == 2
    saas = "dispatcher_saas_read_errors_total"
    assert v[(saas, (("resource", "sip"), ("status", "503")))] == 1
    assert v[(saas, (("resource", "discovery"), ("status", "timeout")))] == 1


def test_the_registry_follows_the_naming_rules() -> None:
    t = PrometheusTelemetry()
    t.call_result("answered", "none", "uploaded", "t1")
    t.saas_read_failed("sip", "503")
    assert metric_names.violations(t.render().decode(), ("dispatcher_",)) == []


def test_no_telemetry_reports_nothing() -> None:
    NO_TELEMETRY.admission_latency(1.0)
    NO_TELEMETRY.accepted({"x": 1.0})
    NO_TELEMETRY.originated("x", True)
    NO_TELEMETRY.saas_read_failed("sip", "503")
    NO_TELEMETRY.call_result("answered", "none", "uploaded", "t1")

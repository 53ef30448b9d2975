"""Readiness and metrics of real processes: mocksaas, a sim cell, the D over RabbitMQ.

``/readyz`` is walked through each of its causes in turn, each brought about by the real
part failing (D-NOTE-2: no verified SIP snapshot while the SaaS answers 503 to the SIP
read; D-DISC-6/D-DISC-9: discovery failing; the cell process stopped; the D's broker link
cut at a TCP proxy, the shared RabbitMQ running on) and lifted again, while ``/healthz``
answers 200 throughout. Then every metric the D and the cell expose, after real calls,
is checked against the Prometheus naming rules (tests/support/metric_names.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agentcall.dispatcher.readiness import BROKER, CELL, DISCOVERY, SIP
from tests.acceptance.dispatcher.harness import Scenario
from tests.support import metric_names
from tests.support.cell_scripts import busy_talk_script
from tests.support.services import amqp_url
from tests.support.tcp_proxy import TcpProxy
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.rabbitmq]

SCRIPT = busy_talk_script(["Hello?"], no_answer_ring_ms=300)  # the `own_cell` fixture reads it


@pytest.fixture
def proxy() -> Iterator[TcpProxy]:
    relay = TcpProxy.for_url(amqp_url()).start()
    yield relay
    relay.close()


def get(s: Scenario, path: str) -> httpx.Response:
    return httpx.get(f"http://127.0.0.1:{s.http_port}{path}", timeout=5)


def verdict_with(s: Scenario, causes: list[str], what: str) -> dict[str, Any]:
    """Wait until /readyz names exactly ``causes`` (200 when none); /healthz stays 200."""

    def seen() -> dict[str, Any] | None:
        ready, live = get(s, "/readyz"), get(s, "/healthz")
        assert live.status_code == 200, f"/healthz {live.status_code} while {what}"
        body: dict[str, Any] = ready.json()
        assert ready.status_code == (200 if body["ready"] else 503)
        return body if [c["cause"] for c in body["causes"]] == causes else None

    return dict(wait_for(seen, 30, f"/readyz causes {causes} while {what}"))


def detail(verdict: dict[str, Any]) -> str:
    return str(verdict["causes"][0]["detail"])


@pytest.mark.timeout(150)
def test_readyz_names_each_cause_and_healthz_stays_200(scene: Scenario, proxy: TcpProxy) -> None:
    s = scene
    s.sip()
    s.task("ready-a")
    s.quota()
    s.fault("config", resource="sip", kind="unavailable", count=10_000)
    s.start(wait_open=False, DISPATCHER_AMQP_URL=proxy.url(amqp_url()))

    v = verdict_with(s, [SIP], "the SaaS answers 503 to the SIP read")
    assert "no verified SIP snapshot yet" in detail(v) and "503" in detail(v)
    assert s.status()["readiness"] == v, "/status carries the same verdict"
    s.clear_faults()
    assert verdict_with(s, [], "the SIP snapshot is verified") == {"ready": True, "causes": []}

    s.fault("discovery", kind="unavailable", count=10_000)
    v = verdict_with(s, [DISCOVERY], "discovery fails")
    assert "503" in detail(v)
    s.clear_faults()
    verdict_with(s, [], "discovery caught up again")

    s.cell.proc.stop()
    v = verdict_with(s, [CELL], "the cell is stopped")
    assert "the cell does not answer" in detail(v)
    s.cell.start()  # same port and data directory: it carries the snapshot still
    verdict_with(s, [], "the cell answers again")

    proxy.cut()
    v = verdict_with(s, [BROKER], "the broker link is cut")
    assert "no AMQP connection" in detail(v)
    proxy.restore()
    verdict_with(s, [], "the broker link is back")
    metrics = get(s, "/metrics").text
    assert "dispatcher_ready 1.0" in metrics
    assert 'dispatcher_readiness_cause{cause="broker_unreachable"} 0.0' in metrics
    assert s.proc is not None and s.proc.alive


@pytest.mark.timeout(90)
def test_every_metric_of_the_d_and_the_cell_follows_the_naming_rules(scenario: Scenario) -> None:
    s = scenario
    callees = ["16000000008", "16000000009", "16000000001"]
    s.sip(allowed_targets=callees)
    s.task("named-a")
    s.quota()
    s.start()
    s.calls("named-a", callees=callees)
    s.wait_results(3, event_type="call.result")

    def counted() -> dict[Any, float] | None:
        found = metric_names.samples(get(s, "/metrics").text)
        return (
            found
            if sum(v for (n, _), v in found.items() if n == "dispatcher_calls_total") >= 3
            else None
        )

    d = wait_for(counted, 10, "three confirmed call.results counted")
    assert d[("dispatcher_admission_latency_seconds_count", ())] >= 3
    assert d[("dispatcher_command_to_dial_seconds_count", ())] >= 3
    outcomes = {dict(labels)["outcome"] for (n, labels) in d if n == "dispatcher_calls_total"}
    assert outcomes == {"answered", "busy", "no_answer"}
    assert d[("dispatcher_recordings_final_total", (("status", "not_created"),))] >= 3
    assert ("dispatcher_outbox_oldest_pending_age_seconds", ()) in d
    assert metric_names.violations(get(s, "/metrics").text, ("dispatcher_",)) == []

    cell = httpx.get(f"{s.cell.url}/metrics", timeout=5).text
    assert metric_names.violations(cell, ("cell_",)) == []
    names = {f.name: f.type for f in metric_names.families(cell)}
    for family in (
        "cell_call_rtp_loss_ratio",
        "cell_call_rtp_jitter_seconds",
        "cell_call_rtp_late_packets",
        "cell_call_media_clock_stalls",
    ):
        assert names[family] == "histogram"

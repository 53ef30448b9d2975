"""A real Dispatcher after real calls of one task: its calls and commands are counted under
that task (dispatcher_task_calls_total, dispatcher_task_commands_total), delivered results
and finalized executions are counters, `promtool check metrics` accepts the whole
exposition, and the shipped Dispatcher dashboard and alerts read only names it exports
(deploy/grafana/dispatcher.json, the `dispatcher` group of deploy/prometheus/alerts.yml)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.acceptance.dispatcher.harness import Scenario
from tests.support import dashboards, metric_names, promtool
from tests.support.cell_scripts import busy_talk_script
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.rabbitmq]

SCRIPT = busy_talk_script(["Hello?"], no_answer_ring_ms=300)  # the `own_cell` fixture reads it


@pytest.mark.timeout(90)
def test_calls_are_counted_per_task_and_the_dashboard_reads_real_names(scene: Scenario) -> None:
    s = scene
    callees = ["16000000008", "16000000009", "16000000001"]
    s.sip(allowed_targets=callees)
    s.task("campaign-a")
    s.quota()
    s.start()
    s.calls("campaign-a", callees=callees)
    s.wait_results(3, event_type="call.result")
    url = f"http://127.0.0.1:{s.http_port}/metrics"

    def counted() -> str | None:
        text = httpx.get(url, timeout=5).text
        calls = [
            v
            for (n, _), v in metric_names.samples(text).items()
            if n == "dispatcher_task_calls_total"
        ]
        return text if sum(calls) >= 3 else None

    text = wait_for(counted, 10, "three confirmed call.results counted by task")
    found = metric_names.samples(text)
    by_task: dict[Any, float] = {
        dict(labels)["outcome"]: v
        for (n, labels), v in found.items()
        if n == "dispatcher_task_calls_total" and dict(labels)["task"] == "campaign-a"
    }
    assert by_task == {"answered": 1, "busy": 1, "no_answer": 1}
    accepted = (
        "dispatcher_task_commands_total",
        (("decision", "accepted"), ("task", "campaign-a")),
    )
    assert found[accepted] == 3
    assert found[("dispatcher_executions_finalized_total", ())] == 3
    assert found[("dispatcher_outbox_delivered_total", ())] >= 3
    checked = promtool.check_metrics(text)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    exported = promtool.exported(text)
    reads = dashboards.expressions(dashboards.dashboard("dispatcher"))
    reads += [(rule["alert"], rule["expr"]) for rule in dashboards.alert_rules("dispatcher")]
    unknown = {where: promtool.names_in(e) - exported for where, e in reads}
    assert {where: names for where, names in unknown.items() if names} == {}
    assert all(promtool.names_in(e) or "up{" in e for _, e in reads)

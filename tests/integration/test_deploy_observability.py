"""The shipped alert rules and dashboards load: `promtool check rules` accepts
deploy/prometheus/alerts.yml (and refuses a broken copy, so the check can fail),
`promtool check config` the example Prometheus configuration, every alert the operator
needs is there reading the metric it is about, and both Grafana dashboards follow the JSON
model with every expression parsed by promtool. That the names they read are the ones the
services really export is checked on real scrapes (tests/integration/orbit/
test_queue_metrics.py, tests/acceptance/dispatcher/test_metrics_deploy.py)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.support import dashboards, promtool

pytestmark = pytest.mark.integration
PROMETHEUS = dashboards.ROOT / "deploy" / "prometheus"


def test_promtool_accepts_the_alert_rules_and_the_example_configuration() -> None:
    rules = promtool.check_rules(dashboards.ALERTS)
    assert rules.returncode == 0, rules.stdout + rules.stderr
    assert "SUCCESS" in rules.stdout
    config = promtool.check_config(PROMETHEUS / "prometheus.yml")
    assert config.returncode == 0, config.stdout + config.stderr


def test_promtool_refuses_a_broken_rule(tmp_path: Path) -> None:
    broken = tmp_path / "alerts.yml"
    text = dashboards.ALERTS.read_text(encoding="utf-8")
    broken.write_text(text.replace("dispatcher_ready == 0", "dispatcher_ready == (0"))
    assert promtool.check_rules(broken).returncode != 0


@pytest.mark.parametrize(
    ("group", "about", "metric"),
    [
        ("orbit", "queue age", "orbit_queue_oldest_ready_age_seconds"),
        ("orbit", "review backlog", "orbit_queue_tasks"),
        ("dispatcher", "outbox backlog", "dispatcher_outbox_backlog"),
        ("dispatcher", "outbox age", "dispatcher_outbox_oldest_pending_age_seconds"),
        ("dispatcher", "readiness", "dispatcher_ready"),
        ("dispatcher", "SaaS read errors", "dispatcher_saas_read_errors_total"),
        ("dispatcher", "call failure rate", "dispatcher_task_calls_total"),
    ],
)
def test_an_alert_reads_each_figure_an_operator_watches(
    group: str, about: str, metric: str
) -> None:
    rules = dashboards.alert_rules(group)
    reading = [r["alert"] for r in rules if metric in promtool.names_in(r["expr"])]
    assert reading, f"no {group} alert about {about} ({metric})"
    for rule in rules:
        assert rule["annotations"]["summary"] and rule["labels"]["severity"], rule["alert"]


@pytest.mark.parametrize("name", ["dispatcher", "orbit"])
def test_each_dashboard_follows_the_json_model_and_its_promql_parses(
    name: str, tmp_path: Path
) -> None:
    model = dashboards.dashboard(name)
    assert dashboards.problems(model) == []
    exprs = dashboards.expressions(model)
    assert len(exprs) >= 10
    parsed = promtool.check_rules(dashboards.promql_file(exprs, tmp_path / "panels.yml"))
    assert parsed.returncode == 0, parsed.stdout + parsed.stderr


def _broken(change: str) -> dict[str, Any]:
    model = copy.deepcopy(dashboards.dashboard("orbit"))
    panel = model["panels"][0]
    if change == "wide":
        panel["gridPos"]["x"] = 20
    elif change == "no expr":
        panel["targets"][0]["expr"] = " "
    elif change == "variable":
        panel["targets"][0]["expr"] = 'orbit_queue_tasks{queue=~"$nope"}'
    elif change == "type":
        panel["type"] = "graph3d"
    elif change == "ids":
        model["panels"][1]["id"] = panel["id"]
    return model


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ("wide", "wider than the 24 columns"),
        ("no expr", "a target without expr"),
        ("variable", "undeclared variables ['nope']"),
        ("type", "unknown type 'graph3d'"),
        ("ids", "panel ids repeat"),
    ],
)
def test_the_model_check_finds_a_broken_dashboard(change: str, problem: str) -> None:
    assert any(problem in p for p in dashboards.problems(_broken(change)))


def test_a_bad_expression_fails_promtool(tmp_path: Path) -> None:
    bad = [("panel", "sum by (queue (orbit_queue_tasks)")]
    assert promtool.check_rules(dashboards.promql_file(bad, tmp_path / "p.yml")).returncode != 0

"""The shipped Grafana dashboards (`deploy/grafana/*.json`) and Prometheus alert rules
(`deploy/prometheus/alerts.yml`) read as data: Grafana is not in Debian, so a dashboard is
checked against its JSON model here (what a dashboard needs to load and draw: ids, grid
positions within 24 columns, a Prometheus datasource variable, one target with a PromQL
expression per query, only declared variables), and its expressions with the real promtool
(`promql_file`) and against a real `/metrics` scrape (`tests/support/promtool.py`)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
GRAFANA = ROOT / "deploy" / "grafana"
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"
PANEL_TYPES = frozenset({"timeseries", "stat", "gauge", "table", "bargauge", "text", "row"})
VARIABLE = re.compile(r"\$\{?(\w+)\}?")
BUILTIN = frozenset({"__rate_interval", "__interval", "__range"})


def dashboard(name: str) -> dict[str, Any]:
    model: dict[str, Any] = json.loads((GRAFANA / f"{name}.json").read_text(encoding="utf-8"))
    return model


def alert_rules(group: str) -> list[dict[str, Any]]:
    rules = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))
    found: list[dict[str, Any]] = next(g["rules"] for g in rules["groups"] if g["name"] == group)
    return found


def expressions(model: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, PromQL) of every panel target and every variable's label_values query."""
    found = [
        (f"panel {p.get('title')!r} {t.get('refId')}", str(t.get("expr", "")))
        for p in model.get("panels", [])
        for t in p.get("targets", [])
    ]
    for v in model.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            query = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            inner = re.fullmatch(r"label_values\((.*),\s*\w+\)", query)
            found.append((f"variable {v['name']}", inner.group(1) if inner else query))
    return found


def concrete(expr: str) -> str:
    """The expression as Grafana sends it: intervals filled in, every variable matching all."""
    expr = expr.replace("$__rate_interval", "5m").replace("$__interval", "1m")
    return VARIABLE.sub(".*", expr)


def problems(model: dict[str, Any]) -> list[str]:
    """What keeps the model from loading or drawing as meant (empty: nothing)."""
    found = [f"no {key}" for key in ("uid", "title", "schemaVersion", "panels") if key not in model]
    variables = {v.get("name") for v in model.get("templating", {}).get("list", [])}
    if "datasource" not in variables:
        found.append("no datasource variable")
    ids = [p.get("id") for p in model.get("panels", [])]
    if len(ids) != len(set(ids)):
        found.append("panel ids repeat")
    for panel in model.get("panels", []):
        found += [f"panel {panel.get('title')!r}: {p}" for p in _panel_problems(panel)]
    for where, expr in expressions(model):
        unknown = set(VARIABLE.findall(expr)) - variables - BUILTIN
        if unknown:
            found.append(f"{where}: undeclared variables {sorted(unknown)}")
    return found


def _panel_problems(panel: dict[str, Any]) -> list[str]:
    found = []
    if panel.get("type") not in PANEL_TYPES:
        found.append(f"unknown type {panel.get('type')!r}")
    if not panel.get("title"):
        found.append("no title")
    grid = panel.get("gridPos") or {}
    if not all(isinstance(grid.get(k), int) and grid[k] >= 0 for k in ("x", "y", "w", "h")):
        found.append("gridPos needs x, y, w, h")
    elif grid["w"] == 0 or grid["x"] + grid["w"] > 24:
        found.append("wider than the 24 columns")
    if panel.get("datasource", {}).get("type") != "prometheus":
        found.append("datasource is not Prometheus")
    targets = panel.get("targets") or []
    if not targets and panel.get("type") not in ("text", "row"):
        found.append("no targets")
    refs = [t.get("refId") for t in targets]
    if len(refs) != len(set(refs)) or not all(refs):
        found.append("refIds missing or repeated")
    if not all(str(t.get("expr", "")).strip() for t in targets):
        found.append("a target without expr")
    return found


def promql_file(exprs: list[tuple[str, str]], path: Path) -> Path:
    """A rule file with one recording rule per expression, for `promtool check rules` to
    parse them all."""
    rules = [
        {"record": f"dashboard:check_{n}", "expr": concrete(expr)}
        for n, (_, expr) in enumerate(exprs)
    ]
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    return path

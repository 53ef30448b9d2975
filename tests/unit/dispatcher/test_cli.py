"""``dispatcher`` CLI: fail fast naming the setting, never show the secret, render status."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from agentcall.dispatcher.cli import _readiness, main, render
from tests.support.dispatcher_factories import D_ID

ENV = {
    "DISPATCHER_ID": D_ID,
    "DISPATCHER_SECRET_KEY": "very-secret-value",
    "DISPATCHER_SAAS_URL": "http://127.0.0.1:1",
    "DISPATCHER_AMQP_URL": "amqp://u:p@127.0.0.1:1/",
    "DISPATCHER_STATE_DB": "/tmp/never-opened.sqlite",
    "DISPATCHER_CELL_URL": "http://127.0.0.1:2",
}


@pytest.mark.parametrize("command", [[], ["run"], ["status"], ["check-config"]])
def test_every_command_has_help(command: list[str]) -> None:
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0 and "Usage:" in result.output


def test_run_stops_at_once_naming_the_missing_setting() -> None:
    env = dict(ENV, DISPATCHER_AMQP_URL="")
    result = CliRunner().invoke(main, ["run"], env=env)
    assert result.exit_code == 2
    assert "DISPATCHER_AMQP_URL is missing" in result.output
    assert "very-secret-value" not in result.output


def test_check_config_never_prints_the_secret() -> None:
    result = CliRunner().invoke(main, ["check-config"], env=ENV)
    assert result.exit_code == 0, result.output
    assert D_ID in result.output and "very-secret-value" not in result.output


def test_status_unreachable_is_a_clear_error() -> None:
    result = CliRunner().invoke(main, ["status", "--url", "http://127.0.0.1:9"])
    assert result.exit_code == 1
    assert "cannot read http://127.0.0.1:9/status" in result.output


def test_render_for_humans() -> None:
    status: dict[str, Any] = {
        "dispatcher_id": D_ID,
        "healthy": True,
        "started_at": "2026-09-21T00:00:00Z",
        "admission": {
            "open": False,
            "why_closed": {"discovery": "503"},
            "latency": {"p50_ms": 1.0, "p99_ms": 2.0},
        },
        "discovery": {
            "cursor": 7,
            "caught_up": False,
            "pages_applied": 3,
            "pages_rejected": 1,
            "errors": 2,
        },
        "outbox": {"pending": 1, "delivered": 4, "blocked_payload_too_large": 0},
        "executions": {"finalized": 2},
        "commands": {"accepted:accepted": 2},
        "amqp": {"connected": True},
        "calls": {"cell_boot_id": "b1"},
        "tasks": [
            {
                "task_id": "task-a",
                "status": "running",
                "task_revision": 3,
                "barrier": "none",
                "consumer": "closed",
                "admission": "closed: dispatcher gate",
            }
        ],
        "last_errors": [{"source": "discovery", "error": "HTTP 503"}],
    }
    text = render(status)
    assert "CLOSED (discovery: 503)" in text
    assert "cursor=7" in text and "task-a" in text and "[discovery] HTTP 503" in text


@pytest.mark.parametrize(
    ("verdict", "shown"),
    [
        ({"ready": True, "causes": []}, "readiness  READY"),
        (
            {"ready": False, "causes": [{"cause": "broker_unreachable", "detail": "no AMQP"}]},
            "readiness  NOT READY (broker_unreachable: no AMQP)",
        ),
    ],
)
def test_status_shows_readiness(verdict: dict[str, Any], shown: str) -> None:
    assert f"readiness  {_readiness(verdict)}" == shown

"""`orbit queue show|set` against a running `orbit serve` (docs/orbit/flow-control.md):
settings shown as text and JSON, `set` keeps the rules it is not given, a token without
queues:admin is refused with what to do, and the SDK's task shows its `waiting_reason`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from agentcall.orbit.cli import main
from tests.support.orbit_server import running_server

pytestmark = [pytest.mark.acceptance]


def run(*args: str, env: dict[str, str] | None = None, code: int = 0) -> Result:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False, env=env)
    assert result.exit_code == code, result.output
    return result


def as_json(*args: str, env: dict[str, str] | None = None) -> Any:
    return json.loads(run(*args, "--json", env=env).output)


def test_queue_show_and_set(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'orbit.db'}"
    run("migrate", "--database", url)
    made = as_json("init", "--database", url, "--namespace", "acme", "--queue", "files")
    queue_id = made["queue_id"]
    reader = as_json(
        "token", "create", "--database", url, "--namespace-id", made["namespace_id"],
        "--permission", "tasks:read", "--queue-id", queue_id,
    )  # fmt: skip
    with running_server(url, tmp_path / "server.log") as base:
        env = {"ORBIT_URL": base, "ORBIT_TOKEN": made["token"]}
        assert "no flow control" in run("queue", "show", queue_id, env=env).output
        first = as_json("queue", "set", queue_id, "--max-running-per-key", "3", env=env)
        assert first["flow"] == {"fairness": False, "max_running_per_key": 3}
        second = as_json("queue", "set", queue_id, "--rate", "50", "--fairness", env=env)
        assert second["flow_revision"] == "3"
        assert second["flow"] == {
            "fairness": True,
            "max_running_per_key": 3,
            "rate": {"per_second": 50, "burst": 50, "per_key": False},
        }
        assert second["waiting_by_reason"] == {"concurrency_limit": 0, "rate_limit": 0}
        text = run("queue", "show", queue_id, env=env).output
        assert "max running per key: 3" in text and "rate: 50/s, burst 50 (per queue)" in text
        stale = run(
            "queue", "set", queue_id, "--no-rate", "--expected-revision", "2", env=env, code=1
        ).output
        assert "STATE_CONFLICT" in stale and "run the command again" in stale
        cleared = as_json("queue", "set", queue_id, "--clear", env=env)
        assert cleared["flow"] == {"fairness": False} and "waiting_by_reason" not in cleared
        refused = run(
            "queue", "set", queue_id, "--fairness",
            env={**env, "ORBIT_TOKEN": reader["token"]}, code=1,
        ).output  # fmt: skip
        assert "PERMISSION_DENIED" in refused and "queues:admin" in refused

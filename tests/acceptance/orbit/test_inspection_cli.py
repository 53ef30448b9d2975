"""`orbit queue list`, `orbit token list`, `orbit worker list` and `orbit task
list|show|wait|cancel|retry|resolve` against a running `orbit serve`: JSON with `--json`,
readable tables otherwise; `orbit tasks` stays the same group."""

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


def as_json(*args: str, env: dict[str, str] | None = None, code: int = 0) -> Any:
    return json.loads(run(*args, "--json", env=env, code=code).output)


def test_inspection_commands(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'orbit.db'}"
    run("migrate", "--database", url)
    made = as_json("init", "--database", url, "--namespace", "acme", "--queue", "files")
    tokens = as_json("token", "list", "--database", url)["items"]
    assert [t["namespace_id"] for t in tokens] == [made["namespace_id"]]
    assert tokens[0]["queue_ids"] == [made["queue_id"]]
    assert "tasks:review" in tokens[0]["permissions"]
    assert not {"secret", "secret_sha256", "token"} & set(tokens[0])
    assert "PERMISSIONS" in run("token", "list", "--database", url).output
    with running_server(url, tmp_path / "server.log") as base:
        env = {"ORBIT_URL": base, "ORBIT_TOKEN": made["token"]}
        submitted = as_json(
            "task",
            "submit",
            "--queue-id",
            made["queue_id"],
            "--handler",
            "h",
            "--handler-version",
            "v1",
            "--payload-version",
            "v1",
            "--payload",
            '{"n":1}',
            "--key",
            "k1",
            env=env,
        )
        task_id = submitted["task"]["id"]
        shown = as_json("task", "show", task_id, env=env)
        assert shown["id"] == task_id and shown["state"] == "WAITING"
        assert as_json("tasks", "get", task_id, env=env) == shown  # the old name still works
        listed = as_json("task", "list", "--queue-id", made["queue_id"], env=env)
        assert [item["id"] for item in listed["items"]] == [task_id]
        lines = run("task", "list", "--queue-id", made["queue_id"], env=env).output.splitlines()
        assert lines[0].split() == ["TASK", "STATE", "REV", "HANDLER", "ATTEMPTS", "CREATED"]
        assert lines[1].split()[:3] == [task_id, "WAITING", "1"]
        waited = as_json("task", "wait", task_id, "--timeout", "0.3", env=env, code=2)
        assert waited["state"] == "WAITING"  # not settled in time: exit status 2
        as_json(
            "task",
            "cancel",
            task_id,
            "--expected-revision",
            "1",
            "--reason",
            "no",
            "--key",
            "c1",
            env=env,
        )
        assert as_json("task", "wait", task_id, env=env)["state"] == "CANCELLED"
        queues = as_json("queue", "list", env=env)["items"]
        assert queues[0]["id"] == made["queue_id"] and queues[0]["name"] == "files"
        assert queues[0]["counts"]["CANCELLED"] in (0, 1)  # counts are a few seconds old
        table = run("queue", "list", env=env).output
        assert table.splitlines()[0].split()[:3] == ["NAME", "ID", "WAITING"]
        assert as_json("worker", "list", env=env) == {"items": []}
        assert run("worker", "list", env=env).output.startswith("NAME")
    for group in ("task", "tasks"):
        names = run(group, "--help").output
        for command in ("list", "wait", "cancel", "retry", "resolve"):
            assert f"  {command}" in names, (group, command)
    assert "show" in run("task", "--help").output
    assert "--app" in run("worker", "--help").output  # the worker command's own help

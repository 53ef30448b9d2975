"""The `orbit` command from outside: migrate, init, queue/token management, serve (refusing an
unmigrated database), the tasks commands over HTTP and the SDK example."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from agentcall.orbit.cli import main
from agentcall.orbit.store.migrate import head
from tests.support.orbit_server import running_server
from tests.support.ports import free_port

pytestmark = [pytest.mark.acceptance]
ROOT = Path(__file__).resolve().parents[3]


def orbit(*args: str, env: dict[str, str] | None = None) -> Any:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False, env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.output) if "--json" in args else result.output


def commands(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # resolves lazily imported subcommands too
        command = group.get_command(ctx, name)
        assert command is not None, name
        yield (*prefix, name)
        if isinstance(command, click.Group):
            yield from commands(command, (*prefix, name))


@pytest.mark.parametrize("path", list(commands(main)))
def test_every_command_has_help(path: tuple[str, ...]) -> None:
    output = orbit(*path, "--help")
    assert "Usage:" in output and "--help" in output


def test_tasks_commands_need_url_and_token() -> None:
    result = CliRunner().invoke(
        main, ["tasks", "get", "0" * 32], env={"ORBIT_URL": "", "ORBIT_TOKEN": ""}
    )
    assert result.exit_code == 1
    assert "set ORBIT_URL and ORBIT_TOKEN" in result.output


def test_serve_refuses_an_unmigrated_database(tmp_path: Path) -> None:
    """An existing SQLite file without Orbit's tables (a missing file has its own refusal)."""
    (tmp_path / "fresh.db").touch()
    url = f"sqlite+aiosqlite:///{tmp_path / 'fresh.db'}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentcall.orbit",
            "serve",
            "--database",
            url,
            "--port",
            str(free_port()),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "run `orbit migrate" in done.stderr


def test_operator_and_user_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'orbit.db'}"
    assert orbit("migrate", "--database", url, "--json") == {"from": None, "to": head()}
    made = orbit("init", "--database", url, "--namespace", "acme", "--queue", "files", "--json")
    assert set(made) == {"namespace_id", "queue_id", "token"}
    queue = orbit(
        "queue",
        "create",
        "--database",
        url,
        "--namespace-id",
        made["namespace_id"],
        "--name",
        "second",
        "--json",
    )
    issued = orbit(
        "token",
        "create",
        "--database",
        url,
        "--namespace-id",
        made["namespace_id"],
        "--permission",
        "tasks:read",
        "--permission",
        "tasks:submit",
        "--queue-id",
        made["queue_id"],
        "--queue-id",
        queue["queue_id"],
        "--expires-at",
        "2099-01-01T00:00:00Z",
        "--json",
    )
    assert set(issued) == {"token_id", "token"} and issued["token"].startswith("orb_")
    assert orbit("token", "revoke", "--database", url, "--token-id", issued["token_id"], "--json")
    bad = CliRunner().invoke(
        main, ["init", "--database", url, "--namespace", "acme", "--queue", "files"]
    )
    assert bad.exit_code == 1 and "exists" in bad.output

    with running_server(url, tmp_path / "server.log") as base:
        env = {"ORBIT_URL": base, "ORBIT_TOKEN": made["token"], "ORBIT_QUEUE_ID": made["queue_id"]}
        payload = '{"sequence":9007199254740993,"ratio":1.10}'
        submit = [
            "tasks",
            "submit",
            "--queue-id",
            made["queue_id"],
            "--handler",
            "file.convert",
            "--handler-version",
            "v1",
            "--payload-version",
            "v1",
            "--payload",
            payload,
            "--key",
            "cli-1",
            "--json",
        ]
        first = orbit(*submit, env=env)
        assert first["deduplicated"] is False and first["task"]["state"] == "WAITING"
        assert orbit(*submit, env=env)["deduplicated"] is True
        task_id = first["task"]["id"]
        got = CliRunner().invoke(main, ["tasks", "get", task_id, "--json"], env=env)
        assert '"payload":{"sequence":9007199254740993,"ratio":1.10}' in got.output
        listed = orbit("tasks", "list", "--queue-id", made["queue_id"], "--all", "--json", env=env)
        assert [item["id"] for item in listed["items"]] == [task_id]
        cancelled = orbit(
            "tasks",
            "cancel",
            task_id,
            "--expected-revision",
            "1",
            "--reason",
            "not needed",
            "--key",
            "cli-c",
            "--json",
            env=env,
        )
        assert cancelled["task"]["state"] == "CANCELLED"
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        runpy.run_path(str(ROOT / "examples" / "orbit_tasks.py"), run_name="__main__")
        printed = capsys.readouterr().out
        assert "cancelled" in printed and "STATE_CONFLICT" in printed

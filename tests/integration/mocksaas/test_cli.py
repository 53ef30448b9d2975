"""`mocksaas` is usable by hand: --help everywhere, and the README session works."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import click
import pytest
from aio_pika.abc import AbstractRobustConnection
from click.testing import CliRunner

from agentcall.mocksaas.cli import main
from tests.integration.mocksaas.amqp_helpers import message_count
from tests.integration.mocksaas.harness import Server, mocksaas_command

pytestmark = [pytest.mark.integration, pytest.mark.rabbitmq]


def all_commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [prefix]
    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            out += all_commands(cmd, (*prefix, name))
        else:
            out.append((*prefix, name))
    return out


@pytest.mark.parametrize("path", all_commands(main), ids=lambda p: " ".join(p) or "mocksaas")
def test_help_on_every_command(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(main, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    help_text = result.output.split("Options:")[0].split("\n", 2)[-1].strip()
    assert len(help_text) > 10, f"{path} has no help text"


async def test_readme_session(server: Server, amqp: AbstractRobustConnection) -> None:
    runner = CliRunner(env={"MOCKSAAS_URL": server.url})

    def run(*args: str) -> str:
        result = runner.invoke(main, ["admin", *args])
        assert result.exit_code == 0, result.output
        return result.output

    d = run("dispatcher", "create", "--id-only").strip()
    try:
        run("sip", "set", d)
        run("task", "put", d, "task-1", "--tenant-id", "tenant-1", "--tenant-key", "tenant-1")
        out = json.loads(run("call", d, "task-1", "--count", "3"))
        assert out["confirmed"] == 3
        assert await message_count(amqp, f"agent-call.d.{d}.task.task-1.v3") == 3
        summary = json.loads(run("results", "summary", d))
        assert summary["deliveries"] == 0
        head = json.loads(run("events", "head", d))
        assert head["head"] == 1
    finally:
        run("dispatcher", "delete", d)


def test_admin_errors_exit_1_with_json(server: Server) -> None:
    runner = CliRunner(env={"MOCKSAAS_URL": server.url})
    result = runner.invoke(
        main, ["admin", "dispatcher", "show", "00000000-0000-4000-8000-000000000000"]
    )
    assert result.exit_code == 1
    assert json.loads(result.output)["error"]["code"] == "not_found"
    result = runner.invoke(main, ["admin", "--url", "http://127.0.0.1:1", "dispatcher", "list"])
    assert result.exit_code == 1 and "unreachable" in result.output


def test_serve_fails_fast_with_a_clear_message(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            *mocksaas_command(),
            "serve",
            "--http-port",
            "0",
            "--db",
            str(tmp_path / "s.db"),
            "--amqp-url",
            "amqp://nobody:secret@127.0.0.1:1/",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "cannot connect to amqp://***@127.0.0.1:1/" in proc.stderr
    assert "secret" not in proc.stderr

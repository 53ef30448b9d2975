"""The `orbit` command group imports its subcommands lazily."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from agentcall.orbit.cli import COMMANDS, main


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_listed_command_resolves_to_a_click_command(name: str) -> None:
    command = main.get_command(click.Context(main), name)
    assert isinstance(command, click.Command)
    assert command.name == name


def test_unknown_command_is_refused_with_usage_error() -> None:
    result = CliRunner().invoke(main, ["no-such-command"])
    assert result.exit_code == 2
    assert "No such command" in result.output


def test_help_lists_every_command() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0, result.output
    for name in COMMANDS:
        assert f"  {name}" in result.output


def test_worker_command_does_not_import_the_server_stack() -> None:
    probe = (
        "import sys; from agentcall.orbit.cli import main; import click;"
        "main.get_command(click.Context(main), 'worker');"
        "names = ('sqlalchemy', 'alembic', 'agentcall.orbit.api.app');"
        "print(sorted(m for m in names if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    ).stdout
    assert out.strip() == "[]"

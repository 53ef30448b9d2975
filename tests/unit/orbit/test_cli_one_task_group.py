"""One `orbit tasks` group: `orbit task` is an alias of the same group object (not a second
group with its own list of commands), and `orbit --help` lists the group once."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from agentcall.orbit.cli import ALIASES, main

pytestmark = pytest.mark.unit


def test_task_is_the_tasks_group() -> None:
    ctx = click.Context(main)
    assert ALIASES == {"task": "tasks"}
    assert main.get_command(ctx, "task") is main.get_command(ctx, "tasks")


def test_the_help_lists_the_group_once() -> None:
    listed = CliRunner().invoke(main, ["--help"]).output
    names = [line.split()[0] for line in listed.split("Commands:")[1].splitlines() if line]
    assert names.count("tasks") == 1 and "task" not in names


def test_every_task_command_is_in_the_one_group() -> None:
    group = main.get_command(click.Context(main), "tasks")
    assert isinstance(group, click.Group)
    assert set(group.commands) == {
        "batch", "cancel", "get", "list", "resolve", "retry", "show", "submit", "wait",
    }  # fmt: skip
    assert group.commands["show"].callback is group.commands["get"].callback

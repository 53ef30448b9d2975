"""An `orbit` command whose dependencies are not installed (the SDK-only install, without the
`orbit` extra) is listed and, when run, says which extra to install; a missing module of our
own is still a defect that raises. The line is the one of every program of the distribution
(tests/integration/deploy/test_cli_without_extras.py)."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from agentcall.orbit import cli

pytestmark = pytest.mark.unit


def test_a_command_without_its_dependencies_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(cli.COMMANDS, "ghost", ("no_such_dependency_xyz.module", "ghost"))
    listed = CliRunner().invoke(cli.main, ["--help"])
    assert listed.exit_code == 0 and "(not installed: pip install 'agentcall[orbit]')" in (
        listed.output
    )
    ran = CliRunner().invoke(cli.main, ["ghost", "--database", "x"])
    assert ran.exit_code == 2
    assert ran.output == (
        "orbit ghost: the 'orbit' extra is not installed "
        "(No module named 'no_such_dependency_xyz'): pip install 'agentcall[orbit]'\n"
    )


def test_a_missing_module_of_ours_is_a_defect(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(cli.COMMANDS, "ghost", ("agentcall.orbit.no_such_module", "ghost"))
    with pytest.raises(ModuleNotFoundError):
        cli.main.get_command(click.Context(cli.main), "ghost")

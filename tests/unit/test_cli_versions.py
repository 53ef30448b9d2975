"""``--version`` on each of the four commands prints the distribution's version (from the
package metadata, the one version of agentcall)."""

from __future__ import annotations

from importlib.metadata import version

import click
import pytest
from click.testing import CliRunner

from agentcall.cell.cli import main as cell
from agentcall.dispatcher.cli import main as dispatcher
from agentcall.mocksaas.cli import main as mocksaas
from agentcall.orbit.cli import main as orbit

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("name", "command"),
    [("dispatcher", dispatcher), ("orbit", orbit), ("cell", cell), ("mocksaas", mocksaas)],
)
def test_version_everywhere(name: str, command: click.Command) -> None:
    result = CliRunner().invoke(command, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"{name}, version {version('agentcall')}"

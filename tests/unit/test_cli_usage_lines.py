"""`--help` of every command of every command line (the four programs, each group, each
subcommand and each alias) exits 0 and prints a usage line naming the command exactly as it
was typed: `orbit worker --help` says `Usage: orbit worker [OPTIONS]`, never
`orbit worker worker`."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from agentcall.cell.cli import main as cell
from agentcall.dispatcher.cli import main as dispatcher
from agentcall.mocksaas.cli import main as mocksaas
from agentcall.orbit.cli import ALIASES
from agentcall.orbit.cli import main as orbit

pytestmark = pytest.mark.unit

PROGRAMS: dict[str, click.Command] = {
    "dispatcher": dispatcher,
    "orbit": orbit,
    "cell": cell,
    "mocksaas": mocksaas,
}
EXTRA_PATHS = [("orbit", (alias,)) for alias in ALIASES] + [
    ("orbit", ("task", "show")),
    ("orbit", ("tasks", "show")),
]


def _paths(command: click.Command, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    yield path
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, (path, name)
            yield from _paths(sub, (*path, name))


ALL = [(prog, path) for prog, main in PROGRAMS.items() for path in _paths(main, ())]
ALL += EXTRA_PATHS


def test_the_walk_finds_the_nested_commands() -> None:
    found = {(prog, " ".join(path)) for prog, path in ALL}
    assert {
        ("orbit", "worker"),
        ("orbit", "worker list"),
        ("orbit", "tasks submit"),
        ("orbit", "tasks wait"),
        ("orbit", "queue list"),
        ("cell", "serve"),
        ("mocksaas", "admin"),
        ("dispatcher", "init-state"),
    } <= found


@pytest.mark.parametrize(("prog", "path"), ALL, ids=[" ".join([p, *a]) for p, a in ALL])
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_names_the_command_as_typed(prog: str, path: tuple[str, ...], flag: str) -> None:
    result = CliRunner().invoke(PROGRAMS[prog], [*path, flag], prog_name=prog)
    assert result.exit_code == 0, result.output
    usage = result.output.splitlines()[0]
    typed = " ".join([prog, *path])
    assert usage.startswith(f"Usage: {typed} "), usage
    rest = usage.removeprefix(f"Usage: {typed} ").split()
    assert rest and (rest[0].startswith("[") or rest[0].isupper()), usage

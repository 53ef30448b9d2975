"""``cell`` command line: ``cell serve`` runs one cell process (:mod:`.serve`).

The group imports only click: ``serve`` is imported when it is used, so an install without
the ``cell`` extra lists it and, when it is run, says in one line which extra to install
(the same line as the other commands of the distribution) instead of a traceback.
"""

from __future__ import annotations

import importlib
import sys

import click

from agentcall.cell import __version__

COMMANDS: dict[str, tuple[str, str]] = {"serve": ("agentcall.cell.cli.serve", "serve")}
EXTRA = "cell"


class LazyGroup(click.Group):
    """A click group whose subcommands are imported only when they are used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, attribute = target
        try:
            loaded = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is None or exc.name.startswith("agentcall"):
                raise
            return not_installed(f"cell {cmd_name}", exc)
        command = getattr(loaded, attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{module}.{attribute} is not a click command")
        return command


def missing_extra_line(command: str, missing: ModuleNotFoundError) -> str:
    return (
        f"{command}: the '{EXTRA}' extra is not installed ({missing}): "
        f"pip install 'agentcall[{EXTRA}]'"
    )


def not_installed(command: str, missing: ModuleNotFoundError) -> click.Command:
    """A stand-in for a command whose dependencies are not installed: listed in the help,
    and when run (with any arguments, --help included) it says what to install."""

    def refuse() -> None:
        click.echo(missing_extra_line(command, missing), err=True)
        sys.exit(2)

    return click.Command(
        command.rsplit(" ", 1)[-1],
        callback=refuse,
        add_help_option=False,
        short_help=f"(not installed: pip install 'agentcall[{EXTRA}]')",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cell")
def main() -> None:
    """The telephony cell the Dispatcher drives (see docs/cell.md)."""

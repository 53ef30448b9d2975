"""The one line every `orbit` command prints when the dependencies it needs are not installed
(the base install holds the SDK, the worker and the client commands; the server's commands
need the `orbit` extra), and the stand-in command that prints it. Imports only click."""

from __future__ import annotations

import sys
from typing import NoReturn

import click

EXTRA = "orbit"
INSTALL = f"pip install 'agentcall[{EXTRA}]'"


def is_missing_dependency(exc: ModuleNotFoundError) -> bool:
    """A module of another distribution: a missing module of ours is a defect instead."""
    return exc.name is not None and not exc.name.startswith("agentcall")


def missing_extra_line(command: str, missing: ModuleNotFoundError) -> str:
    return f"{command}: the '{EXTRA}' extra is not installed ({missing}): {INSTALL}"


def refuse_missing_extra(command: str, missing: ModuleNotFoundError) -> NoReturn:
    click.echo(missing_extra_line(command, missing), err=True)
    sys.exit(2)


def not_installed(name: str, missing: ModuleNotFoundError) -> click.Command:
    """A stand-in for a command whose dependencies are not installed: listed in the help,
    and when run (with any arguments, --help included) it says what to install."""

    def refuse() -> None:
        refuse_missing_extra(f"orbit {name}", missing)

    return click.Command(
        name,
        callback=refuse,
        add_help_option=False,
        short_help=f"(not installed: {INSTALL})",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )

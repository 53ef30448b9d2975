"""The `orbit` command: `serve`, `migrate`, `init`, `queue`, `token`, `task` (alias `tasks`),
`worker`, `idempotency`.

Operator commands (`migrate`, `init`, `queue`, `token`, `idempotency`) talk to the database given by
`--database` / ORBIT_DATABASE_URL; `tasks` talks to the API at ORBIT_URL with ORBIT_TOKEN.

Subcommands are imported on first use (`LazyGroup`): `orbit worker` then starts without loading
the server, SQLAlchemy and Alembic (about 2 s less on a busy 2-core machine), while `orbit --help`
imports them all to show their summaries. `COMMANDS` is the single list of commands; a unit
test resolves every entry. Installed without the server's dependencies (`pip install agentcall`,
the SDK only), a server command says which extra to install instead of failing on an import.
"""

from __future__ import annotations

import importlib

import click

COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("agentcall.orbit.cli.server", "serve"),
    "migrate": ("agentcall.orbit.cli.server", "migrate"),
    "init": ("agentcall.orbit.cli.admin", "init"),
    "queue": ("agentcall.orbit.cli.inspect_commands", "queue"),  # with list
    "token": ("agentcall.orbit.cli.inspect_commands", "token"),  # with list
    "task": ("agentcall.orbit.cli.inspect_commands", "task"),
    "tasks": ("agentcall.orbit.cli.inspect_commands", "tasks"),  # the same commands as task
    "worker": ("agentcall.orbit.cli.workers", "worker"),  # run one, or list
    "idempotency": ("agentcall.orbit.cli.idempotency", "idempotency"),
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported only when they are invoked."""

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
            return _not_installed(cmd_name, exc)
        command = getattr(loaded, attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{module}.{attribute} is not a click command")
        return command


def _not_installed(name: str, missing: ModuleNotFoundError) -> click.Command:
    """A stand-in for a command whose dependencies are not installed: listed in the help,
    and when run, it says what to install."""
    extra = "pip install 'agentcall[orbit]'"

    def refuse() -> None:
        raise click.ClickException(
            f"orbit {name} needs the server's dependencies ({missing}): {extra}"
        )

    return click.Command(
        name,
        callback=refuse,
        add_help_option=False,
        short_help=f"(not installed: {extra})",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(package_name="agentcall", prog_name="orbit")
def main() -> None:
    """Orbit: a durable task service (Task API v1)."""

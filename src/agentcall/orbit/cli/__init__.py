"""The `orbit` command: `serve`, `migrate`, `init`, `queue`, `token`, `tasks` (alias `task`),
`worker`, `idempotency`, `schedules`, `bulk`.

Operator commands (`migrate`, `init`, `queue create`, `token`, `idempotency`) talk to the database
given by `--database` / ORBIT_DATABASE_URL; the client commands (`tasks`, `schedules`, `bulk`,
`queue list`, `worker list`) talk to the API at ORBIT_URL with ORBIT_TOKEN and need only the
base install.

Subcommands are imported on first use (`LazyGroup`): `orbit worker` then starts without loading
the server, SQLAlchemy and Alembic (about 2 s less on a busy 2-core machine), while `orbit --help`
imports them all to show their summaries. `COMMANDS` is the single list of commands; a unit
test resolves every entry; `ALIASES` names the same command again (not listed in the help).
Installed without the server's dependencies (`pip install agentcall`, the SDK only), a server
command says in one line which extra to install instead of failing on an import
(`agentcall.orbit.cli.extras`).
"""

from __future__ import annotations

import importlib

import click

from agentcall.orbit.cli.extras import is_missing_dependency, not_installed

COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("agentcall.orbit.cli.server", "serve"),
    "migrate": ("agentcall.orbit.cli.server", "migrate"),
    "init": ("agentcall.orbit.cli.admin", "init"),
    "queue": ("agentcall.orbit.cli.queue_flow", "queue"),  # with list, show, set
    "token": ("agentcall.orbit.cli.inspect_commands", "token"),  # with list
    "tasks": ("agentcall.orbit.cli.task_control", "tasks"),  # the whole group
    "worker": ("agentcall.orbit.cli.workers", "worker"),  # run one, or list
    "idempotency": ("agentcall.orbit.cli.idempotency", "idempotency"),
    "schedules": ("agentcall.orbit.cli.schedules", "schedules"),  # through the API
    "bulk": ("agentcall.orbit.cli.bulk", "bulk"),  # bulk operations, through the API
    "audit": ("agentcall.orbit.cli.audit", "audit"),  # list through the API, cleanup on the DB
}
ALIASES = {"task": "tasks"}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported only when they are invoked."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(ALIASES.get(cmd_name, cmd_name))
        if target is None:
            return None
        module, attribute = target
        try:
            loaded = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if not is_missing_dependency(exc):
                raise
            return not_installed(cmd_name, exc)
        command = getattr(loaded, attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{module}.{attribute} is not a click command")
        return command


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(package_name="agentcall", prog_name="orbit")
def main() -> None:
    """Orbit: a durable task service (Task API v1)."""

"""The `orbit` command: `serve`, `migrate`, `init`, `queue`, `token`, `tasks`, `worker`,
`idempotency`.

Operator commands (`migrate`, `init`, `queue`, `token`, `idempotency`) talk to the database given by
`--database` / ORBIT_DATABASE_URL; `tasks` talks to the API at ORBIT_URL with ORBIT_TOKEN.
"""

from __future__ import annotations

import click

from orbit.cli.admin import init, queue, token
from orbit.cli.idempotency import idempotency
from orbit.cli.server import migrate, serve
from orbit.cli.tasks import tasks
from orbit.cli.worker import worker


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="agentcall-orbit", prog_name="orbit")
def main() -> None:
    """Orbit: a durable task service (Task API v1)."""


for command in (serve, migrate, init, queue, token, tasks, worker, idempotency):
    main.add_command(command)

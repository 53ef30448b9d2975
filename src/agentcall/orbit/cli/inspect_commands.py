"""`orbit queue list` (through the API), `orbit token list` (operator, on the database) and
the `orbit task` group: `list | show | wait | cancel | retry | resolve` (and `submit`, `get`,
`batch`), the same commands as `orbit tasks`, which stays as an alias. Each prints a readable
table, or JSON with `--json`."""

from __future__ import annotations

from typing import Any

import click

from agentcall.orbit.cli.admin import queue, token
from agentcall.orbit.cli.common import database_option, json_option, with_database
from agentcall.orbit.cli.table import table
from agentcall.orbit.cli.task_control import tasks
from agentcall.orbit.cli.tasks import _call, _echo_json, _task_json, connection
from agentcall.orbit.domain.times import format_time
from agentcall.orbit.sdk.client import SETTLED_STATES
from agentcall.orbit.store import inspect
from agentcall.orbit.store.db import Database

__all__ = ["queue", "task", "tasks", "token"]
STATES = ("WAITING", "LEASED", "RUNNING", "NEEDS_REVIEW", "SUCCEEDED", "FAILED", "CANCELLED")


@queue.command("list")
@connection
@json_option
def queue_list(url: str | None, token: str | None, as_json: bool) -> None:
    """The token's queues with their tasks per state (ORBIT_URL, ORBIT_TOKEN)."""
    queues = _call(url, token, lambda c: c.list_queues())
    if as_json:
        _echo_json(
            {
                "items": [
                    {
                        "id": q.id,
                        "name": q.name,
                        "counts": q.counts,
                        **(
                            {"oldest_waiting_age_ms": q.oldest_waiting_age_ms}
                            if q.oldest_waiting_age_ms is not None
                            else {}
                        ),
                    }
                    for q in queues
                ]
            }
        )
        return
    rows = [
        [
            q.name,
            q.id,
            *(q.counts.get(s, 0) for s in STATES),
            "" if q.oldest_waiting_age_ms is None else f"{q.oldest_waiting_age_ms / 1000:.1f}s",
        ]
        for q in queues
    ]
    click.echo(table(["NAME", "ID", *STATES, "OLDEST WAITING"], rows))


@token.command("list")
@database_option
@click.option("--namespace-id", default=None, help="Only the tokens of this namespace.")
@json_option
def token_list(database: str, namespace_id: str | None, as_json: bool) -> None:
    """Tokens with their permissions, queues, expiry and revocation (never a secret)."""

    async def load(db: Database) -> list[dict[str, Any]]:
        async with db.read() as conn:
            return await inspect.token_rows(conn, namespace_id)

    rows = with_database(database, load)
    for row in rows:
        for name in ("expires_at", "revoked_at", "created_at"):
            row[name] = None if row[name] is None else format_time(row[name])
    if as_json:
        _echo_json({"items": rows})
        return
    click.echo(
        table(
            ["TOKEN ID", "NAMESPACE", "PERMISSIONS", "QUEUES", "EXPIRES", "REVOKED", "CREATED"],
            [
                [
                    r["id"],
                    r["namespace_id"],
                    " ".join(r["permissions"]),
                    " ".join(r["queue_ids"]),
                    r["expires_at"] or "",
                    r["revoked_at"] or "",
                    r["created_at"],
                ]
                for r in rows
            ],
        )
    )


@tasks.command("wait")
@connection
@click.argument("task_id")
@click.option(
    "--timeout",
    default=60.0,
    show_default=True,
    type=click.FloatRange(0, 86_400),
    help="Seconds to wait for the task to settle.",
)
@json_option
def wait(url: str | None, token: str | None, task_id: str, timeout: float, as_json: bool) -> None:
    """Wait until the task is SUCCEEDED, FAILED, CANCELLED or NEEDS_REVIEW (exit 0), or the
    timeout runs out (exit 2); prints the task."""
    found = _call(url, token, lambda c: c.wait(task_id, timeout=timeout))
    if as_json:
        _echo_json(_task_json(found))
    else:
        click.echo(f"task {found.id} {found.state} revision {found.revision}")
    if found.state not in SETTLED_STATES:
        raise SystemExit(2)


@click.group()
def task() -> None:
    """Tasks through the API (ORBIT_URL, ORBIT_TOKEN): list, show, wait, cancel, retry,
    resolve, submit, batch. `orbit tasks` is the same group."""


for _name, _command in sorted(tasks.commands.items()):
    task.add_command(_command, _name)
task.add_command(tasks.commands["get"], "show")

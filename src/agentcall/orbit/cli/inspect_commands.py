"""`orbit queue list` (through the API: it works from the base install) and `orbit token list`
(operator, on the database). Each prints a readable table, or JSON with `--json`. The database
modules are imported only when a database command runs
(`agentcall.orbit.cli.common.with_database`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from agentcall.orbit.cli.admin import queue, token
from agentcall.orbit.cli.common import database_option, json_option, with_database
from agentcall.orbit.cli.table import table
from agentcall.orbit.cli.tasks import _call, _echo_json, connection
from agentcall.orbit.domain.times import format_time

if TYPE_CHECKING:
    from agentcall.orbit.store.db import Database

__all__ = ["queue", "token"]
STATES = ("WAITING", "LEASED", "RUNNING", "NEEDS_REVIEW", "SUCCEEDED", "FAILED", "CANCELLED")


@queue.command("list")
@connection
@json_option
def queue_list(url: str | None, token: str | None, as_json: bool) -> None:
    """The token's queues: tasks per state, ready and scheduled for later, and how long the
    oldest ready task has been available (ORBIT_URL, ORBIT_TOKEN)."""
    queues = _call(url, token, lambda c: c.list_queues())
    if as_json:
        _echo_json(
            {
                "items": [
                    {
                        "id": q.id,
                        "name": q.name,
                        "counts": q.counts,
                        "ready": q.ready,
                        "scheduled": q.scheduled,
                        **(
                            {"oldest_waiting_age_ms": q.oldest_waiting_age_ms}
                            if q.oldest_waiting_age_ms is not None
                            else {}
                        ),
                        **(
                            {"oldest_ready_age_ms": q.oldest_ready_age_ms}
                            if q.oldest_ready_age_ms is not None
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
            q.ready,
            q.scheduled,
            "" if q.oldest_ready_age_ms is None else f"{q.oldest_ready_age_ms / 1000:.1f}s",
        ]
        for q in queues
    ]
    click.echo(table(["NAME", "ID", *STATES, "READY", "SCHEDULED", "OLDEST READY"], rows))


@token.command("list")
@database_option
@click.option("--namespace-id", default=None, help="Only the tokens of this namespace.")
@json_option
def token_list(database: str, namespace_id: str | None, as_json: bool) -> None:
    """Tokens with their permissions, queues, expiry and revocation (never a secret)."""

    async def load(db: Database) -> list[dict[str, Any]]:
        from agentcall.orbit.store import inspect

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
